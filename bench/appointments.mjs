// Appointments at scale: 50,000 appointments of one company over 10 centers (plus 10,000 of
// another and 5,000 of each of OTHER_COMPANIES more), the front desk's most frequent call through
// the gateway (one center's day), and the write path of a portal: a hold, its booking, and a
// hold of the same slot refused.
// Run: node bench/appointments.mjs after `npm run build` (seeding takes a few seconds). CASES:
// list,claims (both by default); CLAIM_SECONDS (8); BENCH_SERVICES_ROOT: the build of another
// checkout (lib.mjs), for before/after runs.
import http from 'node:http'
import { createRequire } from 'node:module'
import { join } from 'node:path'
import pg from 'pg'
import {
  ROOT,
  behindGateway,
  benchTenant,
  cpuSeconds,
  databaseBackendCpu,
  patientsSayingYes,
  node,
  postgresCpu,
  load,
  machine,
  measure,
  record,
  stackDbRole,
} from './lib.mjs'

const BIG = 50_000
const CENTERS = 10
const OTHER_COMPANIES = Number(process.env.OTHER_COMPANIES ?? 5)
const CASES = (process.env.CASES ?? 'list,claims').split(',')
const CLAIM_SECONDS = Number(process.env.CLAIM_SECONDS ?? 8)
const CLAIM_CONNECTIONS = 8
const centers = Array.from({ length: CENTERS }, (_, c) => `C${c}`)
const { env, token } = await benchTenant('clinic_bench_appointments', { services: ['appointments'], centers })
// Told who holds a refused slot only for centers it sees, so the service looks them up.
const limitedToken = node('scripts/admin.mjs', env, [
  'token:create',
  '--username',
  'bench',
  '--centers',
  centers.join(','),
])

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
let seedSeconds = (await seed(2, 10_000)) + (await seed(1, BIG))
for (let company = 3; company < 3 + OTHER_COMPANIES; company++) seedSeconds += await seed(company, 5_000)
// Company 1's practitioners registered: 08:00-20:00 every day at their center, so each claim checks them.
await db.query(
  `INSERT INTO appointments.practitioners (idempresa, id, name, time_zone, working_hours)
   SELECT 1, 'dr-' || c || '-' || k, 'Dr. Bench ' || c || k, 'Europe/Madrid',
          (SELECT jsonb_agg(jsonb_build_object('codalmacen', 'C' || c, 'weekday', d, 'start', '08:00', 'end', '20:00'))
             FROM generate_series(1, 7) d)
     FROM generate_series(0, ${CENTERS - 1}) c, generate_series(0, 3) k`,
)
// Autovacuum is off on this machine: fresh statistics, as autovacuum would give a real database.
for (const table of ['appointments', 'appointment_counts', 'calendar', 'practitioners'])
  await db.query(`ANALYZE appointments.${table}`)

const day = { center: 'C3', from: '2027-03-01T00:00:00+01:00', to: '2027-03-02T00:00:00+01:00' }
// The statement the service sends for that call, built by its own code from the build (the domain
// turns the query into a filter, the repository the filter into SQL; nothing hand-copied), then
// explained as the service role under row-level security.
const service = createRequire(
  join(process.env.BENCH_SERVICES_ROOT ?? ROOT, 'services', 'appointments', 'package.json'),
)
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
await db.query(`SET LOCAL ROLE ${stackDbRole('clinic_appointments_app', env.DB_ROLE_PREFIX)}`)
await db.query('SET LOCAL search_path TO appointments, public')
await db.query(`SELECT set_config('app.idempresa', '1', true)`)
const plan = (await db.query(`EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) ${listSql}`, params)).rows
  .map((r) => r['QUERY PLAN'])
  .join('\n')
await db.query('ROLLBACK')
if (!/appointments_center_day/.test(plan) || /Seq Scan/.test(plan))
  throw new Error(`not the center-day index:\n${plan}`)

// A booking asks the patients service whether the patient exists: a stand-in that always says yes.
const patients = await patientsSayingYes()

const { api, procs, stop } = await behindGateway('appointments', {
  ...env,
  PATIENTS_URL: patients.url,
})
process.on('exit', stop) // also when a check below throws
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
if (CASES.includes('list')) {
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
}

// Claims: free half hours of company 1's practitioners (11:00-18:30 at +01:00, after the seeded
// mornings, inside their hours in winter and summer), each taken once: slot n is practitioner
// n % 40 on day n / 600. Each round: a hold of the slot, its booking with hold_id, then a hold of
// the same slot by the token limited to centers (409, with the center of what holds it looked up
// and alternatives offered).
const practitioners = Array.from({ length: 40 }, (_, p) => ({
  id: `dr-${p % CENTERS}-${Math.floor(p / CENTERS)}`,
  center: `C${p % CENTERS}`,
}))
const slotOf = (n) => {
  const p = practitioners[n % 40]
  const j = Math.floor(n / 40)
  const start =
    Date.parse('2027-01-04T11:00:00+01:00') + Math.floor(j / 15) * 86_400_000 + (j % 15) * 1_800_000
  return {
    practitioner: p.id,
    codalmacen: p.center,
    starts_at: new Date(start).toISOString(),
    ends_at: new Date(start + 1_800_000).toISOString(),
  }
}
const claims = { rounds: 0, ms: [], statuses: { hold: {}, book: {}, refused: {} }, others: new Map() }
let claimCpu = null
if (CASES.includes('claims')) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: CLAIM_CONNECTIONS })
  const post = (path, serviceToken, body) =>
    new Promise((resolve, reject) => {
      const data = JSON.stringify(body)
      const req = http.request(
        `${api}${path}`,
        {
          method: 'POST',
          agent,
          headers: {
            'x-service-token': serviceToken,
            'content-type': 'application/json',
            'content-length': Buffer.byteLength(data),
          },
        },
        (res) => {
          const chunks = []
          res.on('data', (c) => chunks.push(c))
          res.on('end', () => resolve({ status: res.statusCode, body: Buffer.concat(chunks).toString() }))
        },
      )
      req.on('error', reject)
      req.end(data)
    })
  let next = 0
  const round = async (tally) => {
    const slot = slotOf(next++)
    const t = process.hrtime.bigint()
    const note = (kind, r, want) => {
      claims.statuses[kind][r.status] = (claims.statuses[kind][r.status] ?? 0) + 1
      if (r.status !== want) {
        const what = `${kind} ${r.status}: ${r.body.slice(0, 160)}`
        claims.others.set(what, (claims.others.get(what) ?? 0) + 1)
      }
    }
    const held = await post('/appointments/holds', token, slot)
    if (tally) note('hold', held, 201)
    if (held.status !== 201) return
    const booked = await post('/appointments', token, {
      ...slot,
      patient_id: crypto.randomUUID(),
      hold_id: JSON.parse(held.body).id,
    })
    const refused = await post('/appointments/holds', limitedToken, slot)
    if (!tally) return
    note('book', booked, 201)
    note('refused', refused, 409)
    if (refused.status === 409 && !JSON.parse(refused.body).alternatives?.length)
      claims.others.set(
        'refused without alternatives',
        (claims.others.get('refused without alternatives') ?? 0) + 1,
      )
    claims.ms.push(Number(process.hrtime.bigint() - t) / 1e6)
    claims.rounds++
  }
  const run = async (seconds, tally) => {
    const end = Date.now() + seconds * 1000
    await Promise.all(
      Array.from({ length: CLAIM_CONNECTIONS }, async () => {
        while (Date.now() < end) await round(tally)
      }),
    )
  }
  await run(2, false) // warm-up
  const before = {
    gw: cpuSeconds(procs.gateway.pid),
    svc: cpuSeconds(procs.service.pid),
    backends: await databaseBackendCpu(db),
    self: process.cpuUsage(),
  }
  await run(CLAIM_SECONDS, true)
  const self = process.cpuUsage(before.self)
  let backends = 0
  for (const [pid, seconds] of await databaseBackendCpu(db))
    backends += seconds - (before.backends.get(pid) ?? 0)
  const us = (seconds) => ((seconds / claims.rounds) * 1e6).toFixed(0)
  claimCpu = [
    us(cpuSeconds(procs.gateway.pid) - before.gw),
    us(cpuSeconds(procs.service.pid) - before.svc),
    us(backends),
    us((self.user + self.system) / 1e6),
  ]
  agent.destroy()
}
stop()
patients.server.close()

// The claim's own statements, as the build writes them (purgeQuery, conflictQuery: builds before
// 2026-11-27 export none), explained as the service role under row-level security for a slot
// of the claims just made.
const { purgeQuery, conflictQuery } = service('./dist/db/repositories/calendar-sql.js')
let claimPlans = '(this build exports no purgeQuery or conflictQuery)'
if (purgeQuery && conflictQuery) {
  const taken = { ...slotOf(0), now: new Date() }
  claimPlans = ''
  for (const [name, q] of [
    ['purgeQuery', purgeQuery(sqlOnly, 1, taken)],
    ['conflictQuery (practitioner)', conflictQuery(sqlOnly, 1, { ...taken, holder: 'practitioner' })],
  ]) {
    const { sql, bindings } = q.toSQL().toNative()
    await db.query('BEGIN')
    await db.query(`SET LOCAL ROLE ${stackDbRole('clinic_appointments_app', env.DB_ROLE_PREFIX)}`)
    await db.query('SET LOCAL search_path TO appointments, public')
    await db.query(`SELECT set_config('app.idempresa', '1', true)`)
    const explained = await db.query(`EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) ${sql}`, bindings)
    await db.query('ROLLBACK')
    claimPlans += `${name}:\n${explained.rows.map((r) => r['QUERY PLAN']).join('\n')}\n\n`
  }
}
await db.end()

const quantile = (values, q) =>
  [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor(q * values.length))]
const statuses = (kind) =>
  Object.entries(claims.statuses[kind])
    .map(([status, n]) => `${n} × ${status}`)
    .join(', ')
const claimSection = claimCpu
  ? `## Claims: a hold, its booking, a hold refused

${CLAIM_CONNECTIONS} clients for ${CLAIM_SECONDS} s, each repeating a round on a slot of its own: \`POST /api/appointments/holds\`
(201), \`POST /api/appointments\` with its \`hold_id\` (201; the patients service a stub answering 200), then
\`POST /api/appointments/holds\` of the same slot with a token limited to the company's centers
(409: the service looks up the center of what holds the slot, and offers alternatives). Company 1's
40 practitioners are registered (hours checked on each claim); the calendar holds the slots of every
company's ${(BIG + 10_000 + OTHER_COMPANIES * 5_000).toLocaleString('en')} appointments (but the cancelled ones).

| rounds/s | round p50 ms | round p99 ms | holds | bookings | refused holds |
|---|---|---|---|---|---|
| ${(claims.rounds / CLAIM_SECONDS).toFixed(1)} | ${quantile(claims.ms, 0.5)?.toFixed(1)} | ${quantile(claims.ms, 0.99)?.toFixed(1)} | ${statuses('hold')} | ${statuses('book')} | ${statuses('refused')} |
${claims.others.size ? `\n**Unexpected answers:**\n\n${[...claims.others].map(([what, n]) => `- ${n} × ${what}`).join('\n')}\n` : ''}
CPU per round (us, user + system from /proc): gateway ${claimCpu[0]}, appointments ${claimCpu[1]}, PostgreSQL
${claimCpu[2]} (this database's backends), load generator ${claimCpu[3]}.

The claim's statements for a slot just taken (\`EXPLAIN (ANALYZE, BUFFERS)\`, service role, row-level security):

\`\`\`
${claimPlans.trim()}
\`\`\`
`
  : ''

record(
  'appointments',
  `# Appointments: a center's day at 50,000 appointments per company (${machine()})

Seeded ${BIG} appointments in company 1 (${CENTERS} centers, 40 practitioners, 250 days: 20 a day per
center), 10,000 in company 2 and 5,000 in each of ${OTHER_COMPANIES} more in ${seedSeconds.toFixed(1)} s, with both overlap
constraints, every index and the counter triggers in place; then \`ANALYZE\` (autovacuum is off here).
${rows.length ? listSection() : ''}
${claimSection}`,
)
process.exit(claims.others.size ? 1 : 0)

function listSection() {
  return `
## A center's day

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
`
}
