// The gateway alone: CPU it spends per proxied request (auth from its token cache, signing the
// assertion, rate limits, the access event's group commit and publish, proxying through undici),
// against the same trivial upstream called directly, and beside two floors measured in the same run
// on the same core: fastify + @fastify/http-proxy with no hooks, and node:http + an undici Pool
// (bench/reference-proxy.mjs). No audit consumer and no real service behind it: the full read, as a
// client meets it, is bench/stack.mjs (report the two side by side).
// Run: npm run bench -- (or taskset -c 0 node bench/gateway.mjs) after `npm run build`.
import { spawn } from 'node:child_process'
import http from 'node:http'
import path from 'node:path'
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

/** CPU per request of `pid` over one load of `url` (after a warm-up). */
async function measured(pid, url, headers = {}) {
  await load({ url, headers, duration: 3 }) // warm-up
  const before = cpuSeconds(pid)
  const r = await load({ url, headers })
  return { r, cpuUs: ((cpuSeconds(pid) - before) / r.requests.total) * 1e6 }
}

/** A reference proxy on core 1, as the gateway. */
async function reference(kind) {
  const port = await freePort()
  const child = spawn(
    'taskset',
    [
      '-c',
      '1',
      process.execPath,
      path.join(ROOT, 'bench', 'reference-proxy.mjs'),
      kind,
      String(port),
      upstreamUrl,
    ],
    { stdio: 'inherit' },
  )
  const url = `http://127.0.0.1:${port}/api/patients`
  await waitOk(url)
  const m = await measured(child.pid, url)
  child.kill('SIGTERM')
  return m
}

const direct = await load({ url: `${upstreamUrl}/patients` })
const undici = await reference('undici')
const fastify = await reference('fastify')

const gatewayPort = await freePort()
const gw = startService(
  'gateway',
  {
    ...env,
    GATEWAY_PORT: String(gatewayPort),
    PATIENTS_URL: upstreamUrl,
    RATE_LIMIT_PER_MINUTE: '100000000',
    RATE_LIMIT_PER_ADDRESS_PER_MINUTE: '100000000',
  },
  1,
)
await waitOk(`http://127.0.0.1:${gatewayPort}/api/openapi.json`)
const gateway = await measured(gw.pid, `http://127.0.0.1:${gatewayPort}/api/patients`, {
  'x-service-token': token,
})
gw.kill('SIGTERM')
upstream.close()

const row = (name, { r, cpuUs }) =>
  `| ${name} | ${r.requests.average.toFixed(0)} | ${r.latency.p50} | ${r.latency.p99} | ${r.non2xx} | ${cpuUs === undefined ? '' : cpuUs.toFixed(0)} |`
record(
  'gateway',
  `# The gateway alone (${machine()})

32 connections, 10 s each, GET /api/patients against a trivial upstream; each proxy pinned to core 1
(taskset), the load generator and the upstream on core 0 (run the script under \`taskset -c 0\`).
CPU per request is the proxy process's user+system time from /proc over the load.

| path | req/s | p50 ms | p99 ms | non-2xx | CPU µs per request |
|---|---|---|---|---|---|
${row('upstream direct', { r: direct })}
${row('node:http + undici Pool (floor)', undici)}
${row('fastify + @fastify/http-proxy, no hooks (floor)', fastify)}
${row('the gateway (X-service-Token)', gateway)}

The gateway: **${gateway.cpuUs.toFixed(0)} µs** per proxied request, ${(gateway.cpuUs / fastify.cpuUs).toFixed(1)}x fastify +
@fastify/http-proxy and ${(gateway.cpuUs / undici.cpuUs).toFixed(1)}x node:http + undici in this run. It
authenticates the token (cache), checks scope, centers and rate limits, signs the Ed25519 assertion,
and commits the request's access event to its outbox before answering (an \`http.batch\` per group commit,
published to RabbitMQ; no audit consumer here). The full read through the stack is \`stack.md\`.
`,
)
process.exit(0)
