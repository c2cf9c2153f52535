// Gateway overhead: CPU time the gateway spends per proxied request (auth from its token cache,
// assertion signing, rate limiting, access event, proxying through undici), against the same
// upstream called directly. Target: well under the 354 us/request measured for express-gateway.
// Run: npm run bench -- (or node bench/gateway.mjs) after `npm run build`.
import http from 'node:http'
import { benchTenant, cpuSeconds, freePort, load, machine, record, startService, waitOk } from './lib.mjs'

const { env, token } = await benchTenant('clinic_bench_gateway', { services: [] })

// A trivial upstream, so the numbers are the gateway's.
const body = JSON.stringify({ data: [], meta: { total: 0, offset: 0, limit: 25, next: null } })
const upstreamPort = await freePort()
const upstream = http
  .createServer((req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' })
    res.end(body)
  })
  .listen(upstreamPort, '127.0.0.1')

const gatewayPort = await freePort()
const gw = startService(
  'gateway',
  {
    ...env,
    GATEWAY_PORT: String(gatewayPort),
    PATIENTS_URL: `http://127.0.0.1:${upstreamPort}`,
    RATE_LIMIT_PER_MINUTE: '100000000',
    RATE_LIMIT_PER_ADDRESS_PER_MINUTE: '100000000',
  },
  1,
)
await waitOk(`http://127.0.0.1:${gatewayPort}/api/openapi.json`)

const direct = await load({ url: `http://127.0.0.1:${upstreamPort}/patients` })
await load({
  url: `http://127.0.0.1:${gatewayPort}/api/patients`,
  headers: { 'x-service-token': token },
  duration: 3,
}) // warm-up
const cpuBefore = cpuSeconds(gw.pid)
const proxied = await load({
  url: `http://127.0.0.1:${gatewayPort}/api/patients`,
  headers: { 'x-service-token': token },
})
const cpuUs = ((cpuSeconds(gw.pid) - cpuBefore) / proxied.requests.total) * 1e6

gw.kill('SIGTERM')
upstream.close()

record(
  'gateway',
  `# Gateway overhead (${machine()})

32 connections, 10 s each, GET /api/patients with X-service-Token against a trivial upstream.

| path | req/s | p50 ms | p99 ms | non-2xx |
|---|---|---|---|---|
| upstream direct | ${direct.requests.average.toFixed(0)} | ${direct.latency.p50} | ${direct.latency.p99} | ${direct.non2xx} |
| through gateway | ${proxied.requests.average.toFixed(0)} | ${proxied.latency.p50} | ${proxied.latency.p99} | ${proxied.non2xx} |

Gateway CPU per proxied request: **${cpuUs.toFixed(0)} us** (user+system, /proc; express-gateway measured 354 us here).
The gateway is pinned to core 1 (taskset); the load generator and the upstream run on core 0 (run the\nscript under \`taskset -c 0\`), PostgreSQL and RabbitMQ wherever they are. Every proxied request also\nwrites its \`http.request\` audit event through the outbox and publishes it, which is in this figure.
`,
)
process.exit(0)
