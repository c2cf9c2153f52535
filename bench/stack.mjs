// The stack as a user meets it: gateway + patients + audit + webhooks as processes, PostgreSQL and
// RabbitMQ, 20,000 patients in one company, autocannon on the same machine. For each request kind:
// rate and latency, then where the CPU went, per request, in every process that served it
// (gateway, patients, audit, PostgreSQL backends, RabbitMQ; from /proc, over the load and the audit
// drain that follows it), SQL statements per request (db_statements_total of each service), and for
// writes the commit-to-audit latency. RSS of each service idle and after load.
// Run: node bench/stack.mjs after `npm run build`. Quiet machine: nothing else running.
import { readFileSync } from 'node:fs'
import pg from 'pg'
import {
  BENCH_SECRET,
  bareHttp,
  benchTenant,
  cpuOf,
  cpuSeconds,
  load,
  machine,
  pidsOf,
  record,
  startStack,
} from './lib.mjs'
import { startPerf } from './perf-groups.mjs'

const PATIENTS = Number(process.env.PATIENTS ?? 400_000)
/** Which rows: read, list, fhir-search, fhir-read, create (all but the FHIR ones by default). */
const CASES = (process.env.CASES ?? 'read,list,create').split(',')
/**
 * RATE=n: offer n requests per second in all (autocannon overallRate) instead of as many as 50
 * connections take. CPU per request then compares builds at the same throughput: at saturation
 * a slower build answers fewer requests, and each process's fixed costs per second (timers, GC,
 * polls) weigh on fewer of them.
 */
const RATE = process.env.RATE ? Number(process.env.RATE) : undefined
const WARMUP = Number(process.env.WARMUP ?? 3)
const DURATION = Number(process.env.DURATION ?? 10)
/** The services behind the gateway: webhooks too, which takes every patient event (its change feed). */
const SERVICES = ['patients', 'audit', 'webhooks']
const { env: base, token } = await benchTenant('clinic_bench_stack', {
  services: SERVICES,
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

// The floor of this machine in this run: a bare node:http server answering a read's bytes.
const bare = await bareHttp(
  JSON.stringify({ id: ids[0], first_name: 'Nombre', last_name: 'Apellido', email: 'p@example.test' }),
)
const bareRun = await load({ url: bare.url, connections: 50, duration: DURATION })
bare.stop()

// PROFILE=1: the services run with --perf-basic-prof (JS frames named in perf's stacks) and `perf
// record` samples them during each row's load; the rows' CPU figures then include perf's cost.
const PROFILE = process.env.PROFILE === '1'
if (PROFILE) process.env.BENCH_NODE_ARGS = '--perf-basic-prof --logfile=/dev/null --no-logfile-per-isolate'
const stack = await startStack(base, SERVICES, { WEBHOOKS_SECRET_KEY: BENCH_SECRET })
const { api, procs, ports } = stack
const metricsUrl = {
  gateway: `http://127.0.0.1:${ports.gateway}/metrics`,
  patients: `http://127.0.0.1:${ports.patients}/metrics`,
  audit: `http://127.0.0.1:${ports.audit}/metrics`,
  webhooks: `http://127.0.0.1:${ports.webhooks}/metrics`,
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
const datname = new URL(base.DATABASE_URL).pathname.slice(1)
/** CPU seconds of the stack's own PostgreSQL backends (this database's, but the bench's own connection). */
const backendCpu = new Map()
const stackBackends = async () => {
  const { rows } = await db.query(
    'SELECT pid FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()',
    [datname],
  )
  for (const { pid } of rows)
    try {
      backendCpu.set(pid, cpuSeconds(pid))
    } catch {
      // gone meanwhile: its last reading stays
    }
  return [...backendCpu.values()].reduce((a, b) => a + b, 0)
}
const snapshot = async () => ({
  gateway: cpuSeconds(procs.gateway.pid),
  patients: cpuSeconds(procs.patients.pid),
  audit: cpuSeconds(procs.audit.pid),
  webhooks: cpuSeconds(procs.webhooks.pid),
  postgres: await stackBackends(),
  postgresServer: cpuOf(pidsOf('postgres')),
  rabbitmq: cpuOf(pidsOf('beam.smp')),
  statements: await statements(),
  audited: await count('audit.events'),
  fed: await count('webhooks.events'),
})
const count = async (table) =>
  Number((await db.query(`SELECT count(*) FROM ${table} WHERE idempresa = 1`)).rows[0].count)
/**
 * Until the audit trail has every event the load produced (its consumer drained the queue), and
 * the change feed every patient event.
 */
const drain = async (expected, feedExpected = 0) => {
  const started = Date.now()
  for (;;) {
    const n = await count('audit.events')
    if (n >= expected && (await count('webhooks.events')) >= feedExpected)
      return (Date.now() - started) / 1000
    if (Date.now() - started > 300_000) throw new Error(`audit drain stuck at ${n} of ${expected}`)
    await new Promise((r) => setTimeout(r, 200))
  }
}

const rssIdle = Object.fromEntries(Object.entries(procs).map(([n, p]) => [n, rssMiB(p.pid)]))
const headers = { 'x-service-token': token, 'content-type': 'application/json' }
let i = 0
const cases = [
  {
    key: 'read',
    name: 'GET /api/patients/{id}',
    opts: {
      requests: [
        { method: 'GET', setupRequest: (r) => ({ ...r, path: `/api/patients/${ids[i++ % ids.length]}` }) },
      ],
    },
    events: 1, // its http.request
  },
  { key: 'list', name: 'GET /api/patients?limit=25', opts: { url: `${api}/patients?limit=25` }, events: 1 },
  // The same data as FHIR (DESIGN.md section 19): a searchset of 25 with its exact total, beside the list.
  {
    key: 'fhir-search',
    name: 'GET /api/fhir/R4/Patient?_count=25',
    opts: { url: `${api}/fhir/R4/Patient?_count=25` },
    events: 1,
  },
  {
    key: 'fhir-read',
    name: 'GET /api/fhir/R4/Patient/{id}',
    opts: {
      requests: [
        {
          method: 'GET',
          setupRequest: (r) => ({ ...r, path: `/api/fhir/R4/Patient/${ids[i++ % ids.length]}` }),
        },
      ],
    },
    events: 1,
  },
  {
    key: 'create',
    name: 'POST /api/patients',
    opts: {
      method: 'POST',
      body: JSON.stringify({ first_name: 'Bench', last_name: 'Alta', birth_date: '1990-01-01' }),
    },
    events: 2, // http.request and patient.created
    feed: 1, // patient.created
  },
].filter((c) => CASES.includes(c.key))

const rows = [
  `| bare node:http (the same machine's floor) | ${bareRun.requests.average.toFixed(0)} | ${bareRun.latency.p50} | ${bareRun.latency.p99} | ${bareRun.non2xx} | | | |`,
]
const breakdown = []
const profiles = []
let commitToAudit = null
for (const c of cases) {
  // Warm-up, not counted: the figures are of processes in their steady state (code optimised by the
  // JIT, pools and caches filled), as a service is after its first seconds.
  const { audited, fed } = await snapshot()
  const w = await load({ url: `${api}/patients`, headers, connections: 50, duration: WARMUP, ...c.opts })
  await drain(audited + (w['2xx'] + w.non2xx) * c.events, fed + w['2xx'] * (c.feed ?? 0)) // its events recorded before the count starts
  const before = await snapshot()
  const started = new Date()
  const perf = PROFILE ? startPerf(Object.values(procs).map((p) => p.pid)) : null
  const r = await load({
    url: `${api}/patients`,
    headers,
    connections: 50,
    duration: DURATION,
    ...(RATE ? { overallRate: RATE } : {}),
    ...c.opts,
  })
  if (perf) profiles.push(`${c.name}: ${await perf.stop()}`)
  const requests = r.requests.total
  const drainS = await drain(
    before.audited + (r['2xx'] + r.non2xx) * c.events,
    before.fed + r['2xx'] * (c.feed ?? 0),
  )
  const after = await snapshot()
  const us = (k) => (((after[k] - before[k]) / requests) * 1e6).toFixed(0)
  const total = ['gateway', 'patients', 'audit', 'webhooks', 'postgres', 'rabbitmq'].reduce(
    (s, k) => s + (after[k] - before[k]),
    0,
  )
  const stmts = (k) => ((after.statements[k] - before.statements[k]) / requests).toFixed(2)
  const ratio = r.requests.average / bareRun.requests.average
  rows.push(
    `| ${c.name} | ${r.requests.average.toFixed(0)} | ${r.latency.p50} | ${r.latency.p99} | ${r.non2xx} | ${ratio.toFixed(3)} | ${((total / requests) * 1e6).toFixed(0)} | ${drainS.toFixed(1)} |`,
  )
  breakdown.push(
    `| ${c.name} | ${us('gateway')} | ${us('patients')} | ${us('audit')} | ${us('webhooks')} | ${us('postgres')} | ${us('rabbitmq')} | ${us('postgresServer')} | ${stmts('gateway')} / ${stmts('patients')} / ${stmts('audit')} / ${stmts('webhooks')} |`,
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
// What the RSS after the load is made of, from each process's own metrics (prom-client's defaults):
// V8's heap (reserved and used) and what lives outside it (buffers, native allocations).
const memory = {}
for (const [n, url] of Object.entries(metricsUrl)) {
  const text = await (await fetch(url)).text()
  const metric = (name, label = '') =>
    new RegExp(`^${name}(\\{[^}]*${label}[^}]*\\})? ([0-9.e+]+)$`, 'm').exec(text)?.[2] / 2 ** 20
  memory[n] = {
    heapTotal: metric('nodejs_heap_size_total_bytes'),
    heapUsed: metric('nodejs_heap_size_used_bytes'),
    external: metric('nodejs_external_memory_bytes'),
    newSpace: metric('nodejs_heap_space_size_total_bytes', 'space="new"'),
  }
}

record(
  'stack',
  `# The stack: reads and writes through the gateway, every process counted

${machine()}. Gateway, patients, audit and webhooks from the build (LOG_LEVEL=warn) with PostgreSQL 15 and
RabbitMQ on the same machine; ${PATIENTS.toLocaleString('en')} patients in company 1 (ANALYZEd: autovacuum is off
here); autocannon, 50 connections${RATE ? `, ${RATE} requests/s offered in all` : ''}, ${DURATION} s per row, on the same cores. CPU is user+system
from /proc over the load and the audit drain after it, divided by the requests: PostgreSQL is
the stack's own backends (the connections to this database), RabbitMQ its beam.smp (run on a
quiet machine). "of bare" is the row's req/s over a bare node:http server's, measured first in the
same run with the same client and connections.

| request | req/s | p50 ms | p99 ms | non-2xx | of bare | CPU µs per request, all processes | audit drain after the load, s |
| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |
${rows.join('\n')}

Where the CPU goes (µs per request) and SQL statements per request (db_statements_total,
BEGIN/COMMIT included):

| request | gateway | patients | audit | webhooks | PostgreSQL (the stack's backends) | RabbitMQ | PostgreSQL (the whole server, for reference) | statements gateway / patients / audit / webhooks |
| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |
${breakdown.join('\n')}

Commit to audit row (patient.created) during the POST load: p50 ${Number(commitToAudit?.p50 ?? NaN).toFixed(0)} ms,
p99 ${Number(commitToAudit?.p99 ?? NaN).toFixed(0)} ms over ${commitToAudit?.n ?? 0} patients.

${
  profiles.length
    ? `CPU profile by group (perf record -F 999 -g on the four services during each load, each sample
counted for the first group one of its frames matches from the leaf up: bench/perf-groups.mjs):

${profiles.map((p) => `- ${p}`).join('\n')}
`
    : ''
}
RSS MiB idle / after the load: ${Object.keys(procs)
    .map((n) => `${n} ${rssIdle[n].toFixed(0)} / ${rssLoaded[n].toFixed(0)}`)
    .join(', ')}.

After the load, MiB: ${Object.entries(memory)
    .map(
      ([n, m]) =>
        `${n} V8 heap ${m.heapTotal.toFixed(0)} reserved (${m.heapUsed.toFixed(0)} used, new space ${m.newSpace.toFixed(0)}), outside it ${m.external.toFixed(0)}`,
    )
    .join('; ')}.
`,
)

await db.end()
await stack.stop()
process.exit(0)
