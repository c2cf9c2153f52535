// The gateway alone: CPU it spends per proxied request (auth from its token cache, signing the
// assertion, rate limits, the access event's group commit and publish, proxying through undici),
// against the same trivial upstream called directly, and beside two floors measured in the same run
// on the same core: fastify + @fastify/http-proxy with no hooks, and node:http + an undici Pool
// (bench/reference-proxy.mjs). No audit consumer and no real service behind it: the full read, as a
// client meets it, is bench/stack.mjs (report the two side by side).
// Run: npm run bench -- (or taskset -c 0 node bench/gateway.mjs) after `npm run build`.
//   DURATION   seconds of each load (10), after WARMUP seconds (3) of the same load
//   ROOTS      checkouts whose gateway builds alternate in one run (default BENCH_SERVICES_ROOT, else
//              this one), ROUNDS times (1): before/after in the same minutes, the floors each round
//   RATE       requests per second offered in all (autocannon overallRate) instead of as many as 32
//              connections get answered: on a busy machine the database's commits set a saturated
//              gateway's rate, and with it its batches' sizes and its CPU per request
//   STEPS=1    the gateway's steps one by one (gateway-steps.mjs): fastify + http-proxy with the
//              gateway's own modules added in its order, from the first root's build; each row's
//              CPU over the row before it is that step's
import { spawn } from 'node:child_process'
import http from 'node:http'
import { readFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { serviceEnv } from '../scripts/lib.mjs'
import { STEP_GROUPS, startPerf } from './perf-groups.mjs'
import {
  ROOT,
  benchTenant,
  cpuSeconds,
  freePort,
  load,
  machine,
  record,
  startService,
  waitOk,
} from './lib.mjs'

const DURATION = Number(process.env.DURATION ?? 10)
/** Seconds of load before each measured one (JIT and the token cache warm). */
const WARMUP = Number(process.env.WARMUP ?? 3)
const ROOTS = (process.env.ROOTS ?? process.env.BENCH_SERVICES_ROOT ?? ROOT)
  .split(',')
  .map((r) => path.resolve(r))
const ROUNDS = Number(process.env.ROUNDS ?? 1)
const RATE = process.env.RATE ? Number(process.env.RATE) : undefined
const STEPS = process.env.STEPS === '1'
const PROFILE = process.env.PROFILE === '1'
// JS frames named in perf's stacks (for the gateways started by startService). The V8 log this
// implies goes to a file: with --logfile=/dev/null node 20 writes it to stdout, at a cost to the gateway.
if (PROFILE)
  process.env.BENCH_NODE_ARGS = `--perf-basic-prof --logfile=${path.join(os.tmpdir(), 'clinic-bench-gateway-v8.log')} --no-logfile-per-isolate`

process.env.BENCH_SERVICES_ROOT = ROOTS[0] // the schema benchTenant migrates
const { env, token } = await benchTenant('clinic_bench_gateway', { services: [] })

// A trivial upstream, so the numbers are the gateway's.
const body = JSON.stringify({ data: [], meta: { total: 0, offset: 0, limit: 25, next: null } })
const upstreamPort = await freePort()
const upstreamUrl = `http://127.0.0.1:${upstreamPort}`
const upstream = http
  .createServer((req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' })
    res.end(body)
  })
  .listen(upstreamPort, '127.0.0.1')

const gatewayEnv = (port) => ({
  ...env,
  // OTEL_EXPORTER_OTLP_ENDPOINT and the other OTEL_* settings of this run go to the gateways: the
  // cost of tracing with an exporter (unset: without).
  ...Object.fromEntries(Object.entries(process.env).filter(([k]) => k.startsWith('OTEL_'))),
  GATEWAY_PORT: String(port),
  PATIENTS_URL: upstreamUrl,
  RATE_LIMIT_PER_MINUTE: '100000000',
  RATE_LIMIT_PER_ADDRESS_PER_MINUTE: '100000000',
})
const headers = { 'x-service-token': token }
const rssMiB = (pid) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))[1]) / 1024

/** CPU per request of `child` over one load of `url` (after a warm-up), and its RSS after; then stopped. */
async function measured(child, url, hdrs = {}, profile = false) {
  await waitOk(url, 90_000) // a loaded machine starts a process slowly
  const rate = RATE ? { overallRate: RATE } : {}
  await load({ url, headers: hdrs, duration: WARMUP, ...rate })
  const perf = profile
    ? startPerf([child.pid], { raw: true, groups: STEP_GROUPS, steps: STEP_GROUPS.length - 3 })
    : null
  const before = cpuSeconds(child.pid)
  const r = await load({ url, headers: hdrs, duration: DURATION, ...rate })
  const m = { r, cpuUs: ((cpuSeconds(child.pid) - before) / r.requests.total) * 1e6, rss: rssMiB(child.pid) }
  if (perf) {
    const p = [...(await perf.stop()).values()][0]
    m.profile = new Map([...p.groups].map(([g, n]) => [g, (n / p.total) * m.cpuUs]))
    m.samples = p.total
  }
  child.kill('SIGTERM')
  await new Promise((resolve) => child.once('exit', resolve))
  return m
}

/** A process on core 1, as the gateway (taskset execs node: the pid is node's). */
const children = new Set()
process.on('exit', () => children.forEach((c) => c.kill('SIGKILL')))
function onCore1(args, childEnv) {
  const child = spawn('taskset', ['-c', '1', process.execPath, ...args], { stdio: 'inherit', env: childEnv })
  children.add(child)
  child.on('exit', () => children.delete(child))
  return child
}

async function reference(kind) {
  const port = await freePort()
  const child = onCore1([path.join(ROOT, 'bench', 'reference-proxy.mjs'), kind, String(port), upstreamUrl])
  return measured(child, `http://127.0.0.1:${port}/api/patients`)
}

async function gateway(root) {
  const port = await freePort()
  process.env.BENCH_SERVICES_ROOT = root
  const gw = startService('gateway', gatewayEnv(port), 1)
  await waitOk(`http://127.0.0.1:${port}/api/openapi.json`)
  return measured(gw, `http://127.0.0.1:${port}/api/patients`, headers, PROFILE)
}

async function steps(root, list) {
  const port = await freePort()
  const child = onCore1(
    [path.join(ROOT, 'bench', 'gateway-steps.mjs'), String(port), list],
    serviceEnv('gateway', {
      ...process.env,
      LOG_LEVEL: 'warn',
      ...gatewayEnv(port),
      BENCH_SERVICES_ROOT: root,
    }),
  )
  return measured(child, `http://127.0.0.1:${port}/api/patients`, headers)
}

const uptime = () =>
  os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')
const row = (name, { r, cpuUs, rss }, extra = '') =>
  `| ${name} | ${r.requests.average.toFixed(0)} | ${r.latency.p50} | ${r.latency.p99} | ${r.non2xx} | ${cpuUs === undefined ? '' : cpuUs.toFixed(0)} | ${rss === undefined ? '' : rss.toFixed(0)} | ${extra} |`
const rel = (p) => path.relative(ROOT, p) || '.'

const rounds = []
for (let i = 0; i < ROUNDS; i++) {
  const load0 = uptime()
  const direct = { r: await load({ url: `${upstreamUrl}/patients`, duration: DURATION }) }
  const undici = await reference('undici')
  const fastify = await reference('fastify')
  const gateways = []
  for (const root of ROOTS) gateways.push({ root, m: await gateway(root) })
  rounds.push({ load0, direct, undici, fastify, gateways })
}

// The steps: each row adds to the row before it (the first to fastify + http-proxy, no hooks).
const STEP_ROWS = [
  ['the platform fastify options (logger, request ids)', 'options'],
  ['+ CORS, the platform http plugin, response headers', 'options,platform'],
  ['+ per-address rate limit', 'options,platform,address'],
  ['+ authentication (token cache hit)', 'options,platform,address,auth'],
  ['+ body guards, per-token rate limit', 'options,platform,address,auth,limits'],
  ['+ scope and center checks', 'options,platform,address,auth,limits,checks'],
  ['+ the gateway proxy routes (headers, assertion)', 'options,platform,address,auth,limits,checks,proxy'],
  ['+ access event (group commit, relay)', 'options,platform,address,auth,limits,checks,proxy,access'],
]
let stepTable = ''
if (STEPS) {
  const load0 = uptime()
  const floor = await reference('fastify')
  const measuredSteps = []
  for (const [name, list] of STEP_ROWS) measuredSteps.push([name, await steps(ROOTS[0], list)])
  // The proxy routes without authentication: their header rewrite alone (no principal, no assertion).
  const headersOnly = await steps(ROOTS[0], 'options,platform,address,proxy')
  const full = await gateway(ROOTS[0])
  let prev = floor.cpuUs
  const lines = [row('fastify + @fastify/http-proxy, no hooks', floor)]
  for (const [name, m] of measuredSteps) {
    lines.push(row(name, m, `${m.cpuUs - prev >= 0 ? '+' : ''}${(m.cpuUs - prev).toFixed(0)}`))
    prev = m.cpuUs
  }
  lines.push(
    row(
      'the gateway (server.js: + health, docs, metrics port, CORS origins)',
      full,
      `${full.cpuUs - prev >= 0 ? '+' : ''}${(full.cpuUs - prev).toFixed(0)}`,
    ),
  )
  const addr = measuredSteps[2][1].cpuUs
  stepTable = `
## The gateway's steps (${rel(ROOTS[0])}; load average at the start ${load0}, at the end ${uptime()})

Each row is fastify + @fastify/http-proxy with the gateway's own modules of the rows above it added
(\`gateway-steps.mjs\`, from the build), a process of its own on core 1, measured as the rows above.
Split of the proxy routes' row: their header rewrite alone (without authentication, so no assertion)
costs ${(headersOnly.cpuUs - addr).toFixed(0)} µs over the per-address row (${headersOnly.cpuUs.toFixed(0)} µs).

| build | req/s | p50 ms | p99 ms | non-2xx | CPU µs per request | RSS MiB after | step µs |
|---|---|---|---|---|---|---|---|
${lines.join('\n')}
`
}
upstream.close()

// PROFILE=1: each gateway's CPU per request by step (perf samples' shares of its CPU µs).
const profiled = rounds.flatMap(({ gateways }, i) =>
  gateways.filter(({ m }) => m.profile).map(({ root, m }) => ({ name: `${rel(root)} (round ${i + 1})`, m })),
)
const profileTable = profiled.length
  ? `
## CPU µs per request by step (perf, 999 Hz, during each gateway's load)

Each sample counts for the first frame from the leaf up that belongs to a step, to the proxy or to
fastify (perf-groups.mjs STEP_GROUPS): a library call, or a collection an allocation starts, counts for
the step that made it, and what a step's callback starts through fastify (the rest of the request's
hooks, the forward, the answer's write) for the proxy or fastify; the last three rows are what none
of those frames is under. A step's µs is its share of the samples times
the CPU µs per request of that load.

| step | ${profiled.map(({ name }) => name).join(' | ')} |
|---|${profiled.map(() => '---|').join('')}
${STEP_GROUPS.map(([g]) => `| ${g} | ${profiled.map(({ m }) => (m.profile.get(g) ?? 0).toFixed(0)).join(' | ')} |`).join('\n')}
| all (samples) | ${profiled.map(({ m }) => `${m.cpuUs.toFixed(0)} (${m.samples})`).join(' | ')} |
`
  : ''

record(
  'gateway',
  `# The gateway alone (${machine()})

32 connections${RATE ? ` offering ${RATE} requests/s in all` : ''}, ${DURATION} s each after a ${WARMUP} s warm-up, GET /api/patients against a trivial upstream; each
proxy pinned to core 1 (taskset), the load generator and the upstream on core 0 (run the script under
\`taskset -c 0\`). CPU per request is the proxy process's user+system time from /proc over the load;
RSS its VmRSS after it. "upstream direct" is the bare node:http server the proxies stand in front of.

${rounds
  .map(
    ({ load0, direct, undici, fastify, gateways }, i) => `### Round ${i + 1} (load average ${load0})

| path | req/s | p50 ms | p99 ms | non-2xx | CPU µs per request | RSS MiB after | of fastify + http-proxy |
|---|---|---|---|---|---|---|---|
${row('upstream direct (bare node:http)', direct)}
${row('node:http + undici Pool (floor)', undici)}
${row('fastify + @fastify/http-proxy, no hooks (floor)', fastify)}
${gateways.map(({ root, m }) => row(`the gateway of ${rel(root)} (X-service-Token)`, m, `${(m.cpuUs / fastify.cpuUs).toFixed(1)}x`)).join('\n')}
`,
  )
  .join('\n')}
The gateway authenticates the token (cache), checks scope, centers and rate limits, signs the Ed25519
assertion (in batches), and commits the request's access event to its outbox before answering (an
\`http.batch\` per group commit, published to RabbitMQ; no audit consumer here). The full read through
the stack is \`stack.md\`.
${profileTable}${stepTable}`,
)
process.exit(0)
