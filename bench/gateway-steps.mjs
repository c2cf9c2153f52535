// The gateway's steps one at a time, for bench/gateway.mjs (STEPS=1): fastify + @fastify/http-proxy
// in front of the same upstream as the gateway, with some of the gateway's own modules registered,
// from its build (services/gateway/dist of this checkout, or of BENCH_SERVICES_ROOT's), in the
// order its app.ts registers them. The env is the gateway's (loadGatewayConfig reads it).
//   node bench/gateway-steps.mjs <port> <step,step,...>
// Steps (each needs the ones its row in gateway.mjs lists before it):
//   options   the platform's fastify options (logger, request ids, error handlers) instead of none
//   platform  CORS, the platform's http plugin (version and request-id headers, access line,
//             metrics, problem+json, text safety, route rules) and the gateway's response headers
//   address   the per-address rate limit           auth      authentication (token cache)
//   limits    body guards and the per-token rate limit (@fastify/rate-limit)
//   checks    the scope and center checks
//   proxy     the gateway's proxy routes (its header rewrite, and the assertion when authenticated)
//             instead of one plain @fastify/http-proxy
//   access    the access event (group commit to the outbox, published by the relay)
import { createRequire } from 'node:module'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

const [port, list] = process.argv.slice(2)
const steps = new Set(list.split(',').filter(Boolean))
const root =
  process.env.BENCH_SERVICES_ROOT ?? path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const dist = path.join(root, 'services', 'gateway', 'dist')
const require = createRequire(path.join(root, 'services', 'gateway', 'package.json'))
const gw = (m) => require(path.join(dist, m))

const platform = require('@clinic/platform')
const Fastify = require('fastify')
const { loadGatewayConfig } = gw('config.js')
const config = loadGatewayConfig()
const needsDb = steps.has('auth') || steps.has('access')
const infra = needsDb
  ? await platform.connectService({
      service: 'gateway',
      schema: gw('db/migrations/index.js').SCHEMA,
      role: gw('db/migrations/index.js').APP_ROLE,
      poolMax: 20,
      outbox: steps.has('access'),
      config,
    })
  : { logger: platform.createLogger({ service: 'gateway', level: config.LOG_LEVEL }) }
const version = platform.readVersion()

const app = Fastify(
  steps.has('options')
    ? { ...platform.fastifyOptions(infra.logger, version), trustProxy: false }
    : { logger: false },
)
if (steps.has('platform')) {
  await app.register(require('@fastify/cors'), { origin: false })
  await app.register(platform.http, {
    service: 'gateway',
    version,
    assertionKeys: null,
    internalNetworks: config.INTERNAL_NETWORKS,
    knex: infra.knex,
  })
}
if (steps.has('address'))
  await app.register(gw('plugins/address-limit.js').addressLimit, {
    max: config.RATE_LIMIT_PER_ADDRESS_PER_MINUTE,
  })
if (steps.has('auth')) {
  const { Authenticator } = gw('auth/authenticator.js')
  const { identityRepository } = gw('db/identity-repository.js')
  await app.register(gw('plugins/authenticate.js').authenticate, {
    authenticator: new Authenticator(identityRepository(infra.knex), { ttlMs: config.TOKEN_CACHE_TTL_MS }),
  })
}
if (steps.has('limits')) {
  await app.register(gw('plugins/body-guards.js').bodyGuards)
  await app.register(require('@fastify/rate-limit'), {
    global: false,
    timeWindow: 60_000,
    enableDraftSpec: true,
    skipOnError: true,
  })
  app.addHook(
    'preHandler',
    app.rateLimit({
      max: config.RATE_LIMIT_PER_MINUTE,
      allowList: (req) => !req.principal,
      keyGenerator: (req) => req.principal?.tokenId ?? 'public',
    }),
  )
}
if (steps.has('checks')) {
  await app.register(gw('plugins/scopes.js').scopes)
  await app.register(gw('plugins/centers.js').centers)
}
if (steps.has('access')) {
  const { AccessLog } = gw('access-log.js')
  await app.register(gw('plugins/access-events.js').accessEvents, {
    accessLog: new AccessLog(infra.knex, infra.logger),
  })
}
if (steps.has('platform')) await app.register(gw('plugins/response-headers.js').responseHeaders)
if (steps.has('proxy'))
  await app.register(gw('routes/proxy.js').proxyRoutes, {
    upstreams: config.upstreams,
    signer: config.signer,
  })
else
  await app.register(require('@fastify/http-proxy'), {
    upstream: config.upstreams.patients,
    prefix: '/api/patients',
    rewritePrefix: '/patients',
    undici: { connections: 128, pipelining: 1 },
  })
await app.listen({ port: Number(port), host: '127.0.0.1' })
process.on('SIGTERM', () => {
  void app
    .close()
    .then(() => infra.close?.())
    .finally(() => process.exit(0))
})
