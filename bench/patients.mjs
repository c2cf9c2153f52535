// Patients at scale: one company of 400,000 patients (plus 100,000 of another) and what a list
// with an exact meta.total costs through the gateway, against a plain count(*) per call.
// Run: node bench/patients.mjs after `npm run build` (seeding takes a minute or two).
import pg from 'pg'
import { freePort, freshDatabase, load, machine, node, record, startService, waitOk } from './lib.mjs'

const BIG = 400_000
const databaseUrl = await freshDatabase('clinic_bench_patients')
const env = { DATABASE_URL: databaseUrl, INTERNAL_AUTH_SECRET: 'bench-secret-0123456789abcdef0123456789' }
for (const s of ['gateway', 'patients']) node(`services/${s}/dist/db/migrate.js`, env)
node('scripts/admin.mjs', env, ['company:create', '--id', '1', '--name', 'Big'])
for (const c of ['C1', 'C2', 'C3', 'C4'])
  node('scripts/admin.mjs', env, ['center:create', '--company', '1', '--code', c, '--name', c])
node('scripts/admin.mjs', env, ['user:create', '--company', '1', '--username', 'bench'])
const token = node('scripts/admin.mjs', env, ['token:create', '--username', 'bench'])

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

const ports = { gateway: await freePort(), patients: await freePort() }
const procs = [
  startService('patients', { ...env, PATIENTS_PORT: String(ports.patients) }),
  startService('gateway', {
    ...env,
    GATEWAY_PORT: String(ports.gateway),
    PATIENTS_URL: `http://127.0.0.1:${ports.patients}`,
    RATE_LIMIT_PER_MINUTE: '100000000',
  }),
]
const api = `http://127.0.0.1:${ports.gateway}/api`
await waitOk(`${api}/openapi.json`)
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
for (const [name, path] of cases) {
  const r = await load({
    url: api + path,
    headers: { 'x-service-token': token },
    connections: 8,
    duration: 8,
  })
  rows.push(
    `| ${name} | \`${path}\` | ${r.requests.average.toFixed(0)} | ${r.latency.p50} | ${r.latency.p99} | ${r.non2xx} |`,
  )
}
for (const p of procs) p.kill('SIGTERM')
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
