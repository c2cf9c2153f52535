import Fastify from 'fastify'
import cors from '@fastify/cors'
import rateLimit from '@fastify/rate-limit'
import type { Redis } from 'ioredis'
import {
  RateLimited,
  VERSION_HEADER,
  fastifyOptions,
  http,
  readinessOf,
  type AssertionSigner,
  type ServiceDeps,
} from '@clinic/platform'
import type { AccessLog } from './access-log'
import type { Authenticator } from './auth/authenticator'
import type { Upstreams } from './families'
import { accessEvents } from './plugins/access-events'
import { addressLimit } from './plugins/address-limit'
import { authenticate } from './plugins/authenticate'
import { bodyGuards } from './plugins/body-guards'
import { centers } from './plugins/centers'
import { responseHeaders } from './plugins/response-headers'
import { scopes } from './plugins/scopes'
import { docsRoutes } from './routes/docs'
import { fhirRoutes } from './routes/fhir'
import { fhirExportRoutes } from './routes/fhir-export'
import { ExportRepository } from './db/export-repository'
import { healthRoutes } from './routes/health'
import { proxyRoutes } from './routes/proxy'

export type { Upstreams } from './families'

/** What browser code may send: the API's headers, and W3C Trace Context (a browser's trace goes on). */
const CORS_ALLOWED_HEADERS = [
  'Content-Type',
  'X-service-Token',
  'Authorization',
  'If-Match',
  'Idempotency-Key',
  'X-Request-Id',
  'traceparent',
  'tracestate',
]

/**
 * knex: the identity schema (tokens, and the outbox of access events). The gateway verifies no
 * assertion: it signs them (`signer`, GATEWAY_SIGNING_KEY).
 */
export interface Deps extends Omit<ServiceDeps, 'assertionKeys' | 'serviceSigner'> {
  signer: AssertionSigner
  authenticator: Authenticator
  accessLog: AccessLog
  /** Base URL per service of the table in ./families (patients -> http://127.0.0.1:8081). */
  upstreams: Upstreams
  rateLimitPerMinute: number
  /** How long /api/health reuses its last summary (default 1000 ms). */
  healthCacheMs?: number
  /** Requests per minute per client address, before authentication. */
  rateLimitPerAddressPerMinute: number
  /** Failed authentications per client address and minute before 429 (default 60). */
  authFailuresPerAddressPerMinute?: number
  corsOrigins: string[]
  /** Where clients reach the gateway (PUBLIC_BASE_URL; default http://localhost:8080): FHIR links are absolute under it. */
  publicBaseUrl?: string
  /** See TRUST_PROXY (config.ts): false, a hop count, or proxy addresses and ranges. */
  trustProxy: false | number | string
  redis?: Redis
  /** The access log's clock (monotonic ms): tests move their own. */
  clock?: () => number
  /**
   * FHIR Bulk Data export (server.ts runs its worker): the retention clock and hours, and how to wake
   * the worker. Default: the system clock, 24 hours, no wake (the worker polls).
   */
  exports?: { clock: () => Date; retentionHours: number; wake: () => void }
}

/**
 * The only door. Request path: CORS preflight -> token -> body guards -> per-token rate limit ->
 * scope -> `codalmacen` -> 501 for planned areas, else the proxy; an access event after every
 * response.
 */
export async function buildApp(deps: Deps) {
  // A hop count trusts that many proxies in front, whoever the peer is (only for a gateway no client
  // reaches directly); addresses and ranges check the peer too.
  const trustProxy =
    typeof deps.trustProxy === 'number'
      ? (_address: string, hop: number) => hop < (deps.trustProxy as number)
      : deps.trustProxy
  const app = Fastify({ ...fastifyOptions(deps.logger, deps.version), trustProxy })

  // CORS first: a browser preflight is answered before authentication.
  await app.register(cors, {
    origin: deps.corsOrigins.length ? deps.corsOrigins : false,
    methods: ['GET', 'POST', 'PATCH', 'OPTIONS'],
    allowedHeaders: CORS_ALLOWED_HEADERS,
    exposedHeaders: [
      VERSION_HEADER,
      'ETag',
      'Location',
      'X-Request-Id',
      'RateLimit-Limit',
      'RateLimit-Remaining',
      'RateLimit-Reset',
      'Retry-After',
    ],
    maxAge: 600,
  })
  await app.register(http, {
    service: 'gateway',
    version: deps.version,
    assertionKeys: null,
    // Its own /metrics and /openapi.json: internal addresses only (req.ip, as TRUST_PROXY allows).
    internalNetworks: deps.internalNetworks,
    readiness: readinessOf(deps.knex, deps.amqp),
    knex: deps.knex,
    clock: deps.clock,
  })
  // Two limits, on every request (unknown routes too), counted in Redis when several gateways run:
  // per client address before authentication (floods of missing or unknown tokens cost no
  // database lookup and no audit row beyond the limit), then per token.
  await app.register(addressLimit, { max: deps.rateLimitPerAddressPerMinute, redis: deps.redis })
  await app.register(authenticate, {
    authenticator: deps.authenticator,
    failuresPerAddressPerMinute: deps.authFailuresPerAddressPerMinute,
    redis: deps.redis,
  })
  await app.register(bodyGuards)
  await app.register(rateLimit, {
    global: false,
    timeWindow: 60_000,
    enableDraftSpec: true,
    redis: deps.redis,
    nameSpace: 'clinic-gw-rl-',
    skipOnError: true,
    errorResponseBuilder: (_req, ctx) => new RateLimited(Math.max(1, Math.ceil(ctx.ttl / 1000))),
  })
  app.addHook(
    'preHandler',
    app.rateLimit({
      max: deps.rateLimitPerMinute,
      allowList: (req) => !req.principal,
      keyGenerator: (req) => req.principal?.tokenId ?? 'public',
    }),
  )
  await app.register(scopes)
  await app.register(centers)
  await app.register(accessEvents, { accessLog: deps.accessLog })
  await app.register(responseHeaders)

  await app.register(healthRoutes, deps)
  await app.register(docsRoutes, deps)
  const { knex, upstreams, signer, version, publicBaseUrl = 'http://localhost:8080' } = deps
  await app.register(fhirRoutes, { knex, upstreams, signer, publicBaseUrl, version })
  const exports = deps.exports ?? { clock: () => new Date(), retentionHours: 24, wake: () => undefined }
  await app.register(fhirExportRoutes, { knex, store: new ExportRepository(knex), publicBaseUrl, ...exports })
  await app.register(proxyRoutes, { upstreams, signer, publicBaseUrl })
  return app
}
