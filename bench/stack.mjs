// The stack as a user meets it (ISSUE-10): gateway + patients + audit as processes, PostgreSQL and
// RabbitMQ, 20,000 patients in one company, autocannon on the same machine. For each request kind:
// rate and latency, then where the CPU went, per request, in every process that served it
// (gateway, patients, audit, PostgreSQL backends, RabbitMQ; from /proc, over the load and the audit
// drain that follows it), SQL statements per request (db_statements_total of each service), and for
// writes the commit-to-audit latency. RSS of each service idle and after load.
// Run: node bench/stack.mjs after `npm run build`. Quiet machine: nothing else running.
import { readFileSync } from 'node:fs'
import pg from 'pg'
import { benchTenant, cpuOf, cpuSeconds, load, machine, pidsOf, record, startStack } from './lib.mjs'

const PATIENTS = Number(process.env.PATIENTS ?? 20_000)
const DURATION = Number(process.env.DURATION ?? 10)
const { env: base, token } = await benchTenant('clinic_bench_stack', {
  services: ['patients', 'audit'],
  centers: ['C1', 'C2'],
})
const db = new pg.Client({ connectionString: base.DATABASE_URL })
await db.connect()
await db.query(
  `INSERT INTO patients.patients (idempresa, id, codalmacen, first_name, last_name, birth_date, email)
   SELECT 1, gen_random_uuid(), 'C' || (1 + i % 2), 'Nombre' || i % 997, 'Apellido' || i,
          date '1940-01-01' + (i % 25000), 'p' || i || '@example.test'
     FROM generate_series(1, $1::integer) i`,
  [PATIENTS],
)
// Autovacuum is off on this machine: statistics as autovacuum would keep them.
await db.query('ANALYZE patients.patients')
await db.query('ANALYZE patients.patient_counts')
const ids = (await db.query('SELECT id FROM patients.patients WHERE idempresa = 1 LIMIT 2000')).rows.map(
  (r) => r.id,
)

const stack = await startStack(base, ['patients', 'audit'])
const { api, procs, ports } = stack
const metricsUrl = {
  gateway: `http://127.0.0.1:${ports.gateway}/metrics`,
  patients: `http://127.0.0.1:${ports.patients}/metrics`,
  audit: `http://127.0.0.1:${ports.audit}/metrics`,
}

const rssMiB = (pid) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))[1]) / 1024
const statements = async () =>
  Object.fromEntries(
    await Promise.all(
      Object.entries(metricsUrl).map(async ([name, url]) => {
        const body = await (await fetch(url)).text()
        return [name, Number(/^db_statements_total(?:\{[^}]*\})? (\d+)/m.exec(body)?.[1] ?? 0)]
      }),
    ),
  )
const snapshot = async () => ({
  gateway: cpuSeconds(procs.gateway.pid),
  patients: cpuSeconds(procs.patients.pid),
  audit: cpuSeconds(procs.audit.pid),
  postgres: cpuOf(pidsOf('postgres')),
  rabbitmq: cpuOf(pidsOf('beam.smp')),
  statements: await statements(),
  audited: Number((await db.query('SELECT count(*) FROM audit.events WHERE idempresa = 1')).rows[0].count),
})
/** Until the audit trail has every event the load produced (its consumer drained the queue). */
const drain = async (expected) => {
  const started = Date.now()
  for (;;) {
    const n = Number((await db.query('SELECT count(*) FROM audit.events WHERE idempresa = 1')).rows[0].count)
    if (n >= expected) return (Date.now() - started) / 1000
    if (Date.now() - started > 300_000) throw new Error(`audit drain stuck at ${n} of ${expected}`)
    await new Promise((r) => setTimeout(r, 200))
  }
}

const rssIdle = Object.fromEntries(Object.entries(procs).map(([n, p]) => [n, rssMiB(p.pid)]))
const headers = { 'x-service-token': token, 'content-type': 'application/json' }
let i = 0
const cases = [
  {
    name: 'GET /api/patients/{id}',
    opts: {
      requests: [
        { method: 'GET', setupRequest: (r) => ({ ...r, path: `/api/patients/${ids[i++ % ids.length]}` }) },
      ],
    },
    events: 1, // its http.request
  },
  { name: 'GET /api/patients?limit=25', opts: { url: `${api}/patients?limit=25` }, events: 1 },
  {
    name: 'POST /api/patients',
    opts: {
      method: 'POST',
      body: JSON.stringify({ first_name: 'Bench', last_name: 'Alta', birth_date: '1990-01-01' }),
    },
    events: 2, // http.request and patient.created
  },
]

const rows = []
const breakdown = []
let commitToAudit = null
for (const c of cases) {
  const before = await snapshot()
  const started = new Date()
  const r = await load({ url: `${api}/patients`, headers, connections: 50, duration: DURATION, ...c.opts })
  const requests = r.requests.total
  const drainS = await drain(before.audited + (r['2xx'] + r.non2xx) * c.events)
  const after = await snapshot()
  const us = (k) => (((after[k] - before[k]) / requests) * 1e6).toFixed(0)
  const total = ['gateway', 'patients', 'audit', 'postgres', 'rabbitmq'].reduce(
    (s, k) => s + (after[k] - before[k]),
    0,
  )
  const stmts = (k) => ((after.statements[k] - before.statements[k]) / requests).toFixed(1)
  rows.push(
    `| ${c.name} | ${r.requests.average.toFixed(0)} | ${r.latency.p50} | ${r.latency.p99} | ${r.non2xx} | ${((total / requests) * 1e6).toFixed(0)} | ${drainS.toFixed(1)} |`,
  )
  breakdown.push(
    `| ${c.name} | ${us('gateway')} | ${us('patients')} | ${us('audit')} | ${us('postgres')} | ${us('rabbitmq')} | ${stmts('gateway')} / ${stmts('patients')} / ${stmts('audit')} |`,
  )
  if (c.name.startsWith('POST')) {
    // Commit (the patient row) to its patient.created row on the trail.
    commitToAudit = (
      await db.query(
        `SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY d) AS p50,
                percentile_cont(0.99) WITHIN GROUP (ORDER BY d) AS p99, count(*)::int AS n
           FROM (SELECT extract(epoch FROM e.recorded_at - p.created_at) * 1000 AS d
                   FROM patients.patients p
                   JOIN audit.events e ON e.idempresa = 1 AND e.action = 'patient.created'
                                      AND e.resource_id = p.id::text
                  WHERE p.idempresa = 1 AND p.created_at >= $1) x`,
        [started],
      )
    ).rows[0]
  }
}
const rssLoaded = Object.fromEntries(Object.entries(procs).map(([n, p]) => [n, rssMiB(p.pid)]))

record(
  'stack',
  `# The stack: reads and writes through the gateway, every process counted

${machine()}. Gateway, patients and audit from the build (LOG_LEVEL=warn) with PostgreSQL 15 and
RabbitMQ on the same machine; ${PATIENTS.toLocaleString('en')} patients in company 1 (ANALYZEd: autovacuum is off
here); autocannon, 50 connections, ${DURATION} s per row, on the same cores. CPU is user+system
from /proc over the load and the audit drain after it, divided by the requests: PostgreSQL is
every postgres process of the server, RabbitMQ its beam.smp (run on a quiet machine).

| request | req/s | p50 ms | p99 ms | non-2xx | CPU µs per request, all processes | audit drain after the load, s |
| --- | ---: | ---: | ---: | ---: | ---: | ---: |
${rows.join('\n')}

Where the CPU goes (µs per request) and SQL statements per request (db_statements_total,
BEGIN/COMMIT included):

| request | gateway | patients | audit | PostgreSQL | RabbitMQ | statements gateway / patients / audit |
| --- | ---: | ---: | ---: | ---: | ---: | ---: |
${breakdown.join('\n')}

Commit to audit row (patient.created) during the POST load: p50 ${Number(commitToAudit?.p50 ?? NaN).toFixed(0)} ms,
p99 ${Number(commitToAudit?.p99 ?? NaN).toFixed(0)} ms over ${commitToAudit?.n ?? 0} patients.

RSS MiB idle / after the load: ${Object.keys(procs)
    .map((n) => `${n} ${rssIdle[n].toFixed(0)} / ${rssLoaded[n].toFixed(0)}`)
    .join(', ')}.
`,
)

await db.end()
await stack.stop()
process.exit(0)
