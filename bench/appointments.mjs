// Appointments at scale: 50,000 appointments of one company over 10 centers (plus 10,000 of
// another), and the front desk's most frequent call through the gateway: one center's day.
// Run: node bench/appointments.mjs after `npm run build` (seeding takes a few seconds).
import { createRequire } from 'node:module'
import { join } from 'node:path'
import pg from 'pg'
import {
  ROOT,
  behindGateway,
  benchTenant,
  cpuSeconds,
  postgresCpu,
  load,
  machine,
  measure,
  record,
} from './lib.mjs'

const BIG = 50_000
const CENTERS = 10
const centers = Array.from({ length: CENTERS }, (_, c) => `C${c}`)
const { env, token } = await benchTenant('clinic_bench_appointments', { services: ['appointments'], centers })

const db = new pg.Client({ connectionString: env.DATABASE_URL })
await db.connect()
// Per center 4 practitioners with 5 half-hour appointments a day each: 20 a day per center, over
// 250 days; each appointment its own (fake) patient. Every index, constraint and counter trigger
// is in place while seeding, as in production.
const seed = async (company, n) => {
  const started = Date.now()
  await db.query(
    `INSERT INTO appointments.appointments
       (idempresa, id, patient_id, codalmacen, practitioner, starts_at, ends_at, status, cancellation_reason)
     SELECT $1::integer, gen_random_uuid(), gen_random_uuid(), 'C' || (i % ${CENTERS}),
            'dr-' || (i % ${CENTERS}) || '-' || (i / ${CENTERS}) % 4, t, t + interval '30 minutes',
            CASE WHEN i % 17 = 0 THEN 'cancelled' WHEN i % 5 = 0 THEN 'confirmed' ELSE 'scheduled' END,
            CASE WHEN i % 17 = 0 THEN 'bench' END
       FROM generate_series(0, $2::integer - 1) i,
            LATERAL (SELECT timestamptz '2027-01-04 08:00:00+01' + ((i / ${CENTERS * 4}) / 5) * interval '1 day'
                            + ((i / ${CENTERS * 4}) % 5) * interval '30 minutes' AS t) s`,
    [company, n],
  )
  return (Date.now() - started) / 1000
}
const seedSeconds = (await seed(2, 10_000)) + (await seed(1, BIG))
// Autovacuum is off on this machine: fresh statistics, as autovacuum would give a real database.
await db.query('ANALYZE appointments.appointments')
await db.query('ANALYZE appointments.appointment_counts')

const day = { center: 'C3', from: '2027-03-01T00:00:00+01:00', to: '2027-03-02T00:00:00+01:00' }
// The statement the service sends for that call, built by its own code from the build (the domain
// turns the query into a filter, the repository the filter into SQL; nothing hand-copied), then
// explained as the service role under row-level security.
const service = createRequire(join(ROOT, 'services', 'appointments', 'package.json'))
const { listAppointments } = service('./dist/domain/list-appointments.js')
const { listStatement } = service('./dist/db/repositories/appointments-repository.js')
const sqlOnly = service('knex')({ client: 'pg' }) // builds SQL, never connects
let filter
await listAppointments(
  {
    auth: { companyId: 1, companyCenters: centers, allowedCenters: null },
    log: { info() {}, warn() {} },
    requestId: 'bench',
  },
  { list: async (_company, f) => ((filter = f), { rows: [], total: 0 }) },
  { codalmacen: day.center, from: day.from, to: day.to, sort: 'starts_at', offset: 0, limit: 25 },
)
const { sql: listSql, bindings: params } = listStatement(sqlOnly, 1, filter).toSQL().toNative()
await db.query('BEGIN')
await db.query('SET LOCAL ROLE clinic_appointments_app')
await db.query('SET LOCAL search_path TO appointments, public')
await db.query(`SELECT set_config('app.idempresa', '1', true)`)
const plan = (await db.query(`EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) ${listSql}`, params)).rows
  .map((r) => r['QUERY PLAN'])
  .join('\n')
await db.query('ROLLBACK')
if (!/appointments_center_day/.test(plan) || /Seq Scan/.test(plan))
  throw new Error(`not the center-day index:\n${plan}`)

const { api, procs, stop } = await behindGateway('appointments', env)
const path = `/appointments?codalmacen=${day.center}&from=${encodeURIComponent(day.from)}&to=${encodeURIComponent(day.to)}`
const check = await (await fetch(api + path, { headers: { 'x-service-token': token } })).json()
if (check.meta?.total !== 20)
  throw new Error(`a day of ${day.center} has ${check.meta?.total} appointments, expected 20`)
const all = await (
  await fetch(`${api}/appointments?limit=1`, { headers: { 'x-service-token': token } })
).json()
if (all.meta.total !== BIG) throw new Error(`meta.total is ${all.meta.total}, expected ${BIG}`)

const rows = []
const cpu = []
await load({ url: api + path, headers: { 'x-service-token': token }, connections: 8, duration: 2 }) // warm-up
for (const connections of [8, 50]) {
  const before = {
    gw: cpuSeconds(procs.gateway.pid),
    svc: cpuSeconds(procs.service.pid),
    pg: postgresCpu(),
    self: process.cpuUsage(),
  }
  const { result: r, row } = await measure(api + path, token, connections)
  const us = (seconds) => ((seconds / r.requests.total) * 1e6).toFixed(0)
  const self = process.cpuUsage(before.self)
  rows.push(`| ${connections} | ${row}`)
  cpu.push(
    `| ${connections} | ${us(cpuSeconds(procs.gateway.pid) - before.gw)} | ${us(cpuSeconds(procs.service.pid) - before.svc)} | ${us(postgresCpu() - before.pg)} | ${us((self.user + self.system) / 1e6)} |`,
  )
}
stop()
await db.end()

record(
  'appointments',
  `# Appointments: a center's day at 50,000 appointments per company (${machine()})

Seeded ${BIG} appointments in company 1 (${CENTERS} centers, 40 practitioners, 250 days: 20 a day per
center) and 10,000 in company 2 in ${seedSeconds.toFixed(1)} s, with both overlap constraints, every index
and the counter triggers in place; then \`ANALYZE\` (autovacuum is off here).

The front desk's call through the gateway (token auth, rate limit, access event, proxy, RLS), 20
appointments and an exact \`meta.total\`, 8 s per row:

\`GET /api${path}\`

| connections | req/s | p50 ms | p99 ms | non-2xx |
|---|---|---|---|---|
${rows.join('\n')}

Where the time goes: CPU per request (us, user + system from /proc) of each process on the 2 cores.
At 8 connections the p50 is about 8 / (req/s): the cores are saturated, so latency follows the CPU
each request costs across the gateway, the service, PostgreSQL and the load generator.

| connections | gateway | appointments | PostgreSQL (all) | load generator |
|---|---|---|---|---|
${cpu.join('\n')}

Its SQL plan (\`EXPLAIN (ANALYZE, BUFFERS)\`, as the service role under row-level security): the
page and the day's exact total read the same range of the \`(idempresa, codalmacen, starts_at, id)\`
index, in one statement (lists filtered by center and status only read counter rows for the total
instead):

\`\`\`
${plan}
\`\`\`
`,
)
process.exit(0)
