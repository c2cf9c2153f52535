// The floors of the gateway's figure, measured in the same run as it (bench/gateway.mjs): a proxy
// that does nothing but proxy, in front of the same upstream, from the gateway's own packages.
//   node bench/reference-proxy.mjs fastify <port> <upstream>   fastify + @fastify/http-proxy, no hooks
//   node bench/reference-proxy.mjs undici <port> <upstream>    node:http + an undici Pool
import http from 'node:http'
import { createRequire } from 'node:module'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

const [kind, port, upstream] = process.argv.slice(2)
const require = createRequire(
  path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'services', 'gateway', 'package.json'),
)

if (kind === 'fastify') {
  const app = require('fastify')({ logger: false })
  await app.register(require('@fastify/http-proxy'), {
    upstream,
    prefix: '/api/patients',
    rewritePrefix: '/patients',
    undici: { connections: 128, pipelining: 1 },
  })
  await app.listen({ port: Number(port), host: '127.0.0.1' })
} else if (kind === 'undici') {
  const { Pool } = require('undici')
  const pool = new Pool(upstream, { connections: 128, pipelining: 1 })
  http
    .createServer(async (req, res) => {
      try {
        const r = await pool.request({ method: req.method, path: req.url.replace('/api', '') })
        res.writeHead(r.statusCode, { 'content-type': r.headers['content-type'] })
        res.end(Buffer.from(await r.body.arrayBuffer()))
      } catch {
        res.writeHead(503).end()
      }
    })
    .listen(Number(port), '127.0.0.1')
} else throw new Error('kind: fastify or undici')
