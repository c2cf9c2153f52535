// Patients at scale: one company of 400,000 patients (plus 100,000 of another) and what a list
// with an exact meta.total costs through the gateway, against a plain count(*) per call.
// Run: node bench/patients.mjs after `npm run build` (seeding takes a minute or two).
import pg from 'pg'
import { behindGateway, benchTenant, machine, measure, record } from './lib.mjs'

const BIG = 400_000
const { env, token } = await benchTenant('clinic_bench_patients', {
  services: ['patients'],
  centers: ['C1', 'C2', 'C3', 'C4'],
})
const databaseUrl = env.DATABASE_URL
const db = new pg.Client({ connectionString: databaseUrl })
await db.connect()
const seed = async (company, n) => {
  const started = Date.now()
  await db.query(
    `INSERT INTO patients.patients (idempresa, id, codalmacen, first_name, last_name, birth_date, national_id, email)
     SELECT $1::integer, gen_random_uuid(), 'C' || (1 + i % 4),
            (ARRAY['María','José','Lucía','Juan','Carmen','Pedro'])[1 + i % 6] || i % 997,
            (ARRAY['García','López','Martínez','Sánchez','Pérez','Gómez'])[1 + i % 6] || i,
            date '1940-01-01' + (i % 25000), 'N' || $1::text || '-' || i, 'p' || i || '@example.test'
       FROM generate_series(1, $2::integer) i`,
    [company, n],
  )
  return (Date.now() - started) / 1000
}
const seedSeconds = (await seed(2, 100_000)) + (await seed(1, BIG))
await db.query('ANALYZE patients.patients')

const timeQuery = async (sql, params, runs = 21) => {
  const ms = []
  for (let i = 0; i < runs; i++) {
    const t = process.hrtime.bigint()
    await db.query(sql, params)
    ms.push(Number(process.hrtime.bigint() - t) / 1e6)
  }
  return ms.sort((a, b) => a - b)[Math.floor(runs / 2)]
}
const countMs = await timeQuery('SELECT count(*) FROM patients.patients WHERE idempresa = $1', [1])
const counterMs = await timeQuery('SELECT sum(n) FROM patients.patient_counts WHERE idempresa = $1', [1])

const { api, stop } = await behindGateway('patients', env)
const check = await (await fetch(`${api}/patients?limit=1`, { headers: { 'x-service-token': token } })).json()
if (check.meta.total !== BIG) throw new Error(`meta.total is ${check.meta.total}, expected ${BIG}`)

const cases = [
  ['first page, whole company', '/patients'],
  ['first page, one center', '/patients?codalmacen=C2'],
  ['newest first', '/patients?sort=-created_at'],
  ['offset 10,000', '/patients?offset=10000'],
  ['q, rare name', `/patients?q=${encodeURIComponent('Sánchez12345')}`],
  ['q, national id', '/patients?q=N1-250000'],
]
const rows = []
for (const [name, path] of cases)
  rows.push(`| ${name} | \`${path}\` | ${(await measure(api + path, token, 8)).row}`)
stop()
await db.end()

record(
  'patients',
  `# Patients at 400,000 per company (${machine()})

Seeded ${BIG} patients in company 1 (4 centers) and 100,000 in company 2 in ${seedSeconds.toFixed(0)} s
(with every index and the counter triggers). Lists answer an exact \`meta.total\`.

PostgreSQL alone, median of 21: \`count(*)\` for the company **${countMs.toFixed(1)} ms**; the
counter rows the service reads instead **${counterMs.toFixed(2)} ms**.

Through the gateway (token auth, rate limit, access event, proxy, RLS), 8 connections, 8 s each:

| case | path | req/s | p50 ms | p99 ms | non-2xx |
|---|---|---|---|---|---|
${rows.join('\n')}
`,
)
process.exit(0)
