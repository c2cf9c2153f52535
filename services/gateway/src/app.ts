import Fastify, { type FastifyReply, type FastifyRequest } from 'fastify'
import cors from '@fastify/cors'
import proxy from '@fastify/http-proxy'
import rateLimit from '@fastify/rate-limit'
import type {} from '@fastify/swagger'
import type { Redis } from 'ioredis'
import type { Knex } from 'knex'
import type { Logger } from 'pino'
import {
  ASSERTION_HEADER,
  CenterForbidden,
  NotImplemented,
  PayloadTooLarge,
  RateLimited,
  Unauthenticated,
  UnknownCenter,
  UnsupportedMediaType,
  UpstreamUnavailable,
  ValidationFailed,
  BODY_LIMIT,
  CENTER_CODE,
  VERSION_HEADER,
  fastifyOptions,
  http,
  sendProblem,
  signAssertion,
  type Amqp,
  type Principal,
  readinessOf,
} from '@clinic/platform'
import type { AccessLog } from './access-log'
import type { Authenticator } from './auth/authenticator'
import { BASES } from './bases'
import { docsRoutes } from './routes/docs'
import { healthRoutes } from './routes/health'

declare module 'fastify' {
  interface FastifyRequest {
    principal: Principal | null
    /** Company of a token that was found but refused, for the audit trail. */
    refusedCompany: number
  }
}

export interface Upstreams {
  patients: string
  appointments: string
  comms: string
  audit: string
}

export interface Deps {
  logger: Logger
  knex: Knex
  amqp: Amqp
  version: string
  assertionSecret: string
  authenticator: Authenticator
  accessLog: AccessLog
  upstreams: Upstreams
  rateLimitPerMinute: number
  corsOrigins: string[]
  trustProxy: boolean
  redis?: Redis
}

/** Path family -> upstream service. */
const FAMILIES: Array<[family: string, service: keyof Upstreams]> = [
  ['patients', 'patients'],
  ['appointments', 'appointments'],
  ['comms', 'comms'],
  ['audit', 'audit'],
]
const PLANNED = { documents: 'documents', consents: 'consents', clinical: 'clinical (ophthalmology)' }

/** Headers a client must never set for itself: tenant hints and internal assertions. */
const SPOOFABLE = /^(x-clinic-|x-idempresa|idempresa|x-empresa|x-tenant|x-company|x-user|x-forwarded-user)/i
const CREDENTIALS = ['authorization', 'x-service-token', 'cookie']

const isPublic = (req: FastifyRequest) =>
  req.method === 'OPTIONS' || req.routeOptions.config?.public === true || req.url.startsWith('/api/docs')

const JSON_TYPE = /^application\/([a-z0-9.+-]*\+)?json\s*(;|$)/i

export async function buildApp(deps: Deps) {
  const app = Fastify({ ...fastifyOptions(deps.logger), trustProxy: deps.trustProxy })
  app.decorateRequest('principal', null)
  app.decorateRequest('refusedCompany', 0)

  // CORS first: a browser preflight is answered before authentication.
  await app.register(cors, {
    origin: deps.corsOrigins.length ? deps.corsOrigins : false,
    methods: ['GET', 'POST', 'PATCH', 'OPTIONS'],
    allowedHeaders: [
      'Content-Type',
      'X-service-Token',
      'Authorization',
      'If-Match',
      'Idempotency-Key',
      'X-Request-Id',
    ],
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
    assertionSecret: null,
    readiness: readinessOf(deps.knex, deps.amqp),
  })

  app.addHook('onRequest', async (req) => {
    if (isPublic(req)) return
    const result = await deps.authenticator.authenticate(req.headers)
    if (!result.ok) {
      req.refusedCompany = result.companyId ?? 0
      req.log.info({ cause: result.reason }, 'authentication refused')
      throw new Unauthenticated()
    }
    req.principal = result.principal
  })

  // Body guards before anything is read or proxied: JSON only, 64 KiB at most.
  app.addHook('onRequest', async (req) => {
    const length = Number(req.headers['content-length'] ?? 0)
    const hasBody = length > 0 || req.headers['transfer-encoding'] !== undefined
    if (!hasBody) return
    if (length > BODY_LIMIT) throw new PayloadTooLarge(BODY_LIMIT)
    if (!JSON_TYPE.test(req.headers['content-type'] ?? '')) throw new UnsupportedMediaType()
  })

  await app.register(rateLimit, {
    global: true,
    hook: 'preHandler',
    max: deps.rateLimitPerMinute,
    timeWindow: 60_000,
    enableDraftSpec: true,
    redis: deps.redis,
    nameSpace: 'clinic-gw-rl-',
    skipOnError: true,
    allowList: (req) => !req.principal,
    keyGenerator: (req) => req.principal?.tokenId ?? `ip:${req.ip}`,
    errorResponseBuilder: (_req, ctx) => new RateLimited(Math.max(1, Math.ceil(ctx.ttl / 1000))),
  })

  // codalmacen: one center code of the caller's company, and one the token may use.
  app.addHook('preHandler', async (req) => {
    const auth = req.principal
    const code = (req.query as Record<string, unknown> | undefined)?.codalmacen
    if (!auth || code === undefined) return
    if (typeof code !== 'string' || !CENTER_CODE.test(code))
      throw new ValidationFailed([
        { path: '/codalmacen', message: 'must be one center code of 1-10 letters, digits, _ or -' },
      ])
    if (!auth.companyCenters.includes(code)) throw new UnknownCenter()
    if (auth.allowedCenters && !auth.allowedCenters.includes(code)) throw new CenterForbidden()
  })

  app.addHook('onResponse', async (req, reply) => {
    if (isPublic(req)) return
    const code = (req.query as Record<string, unknown> | undefined)?.codalmacen
    deps.accessLog.record({
      method: req.method,
      path: req.url.split('?')[0]!,
      status: reply.statusCode,
      durationMs: reply.elapsedTime,
      ip: req.ip,
      requestId: String(req.id),
      principal: req.principal,
      companyId: req.refusedCompany,
      codalmacen: typeof code === 'string' && req.principal?.companyCenters.includes(code) ? code : null,
    })
  })

  await app.register(healthRoutes, { deps })
  await app.register(docsRoutes, { deps })

  for (const base of BASES) {
    for (const [family, area] of Object.entries(PLANNED)) {
      const planned = async () => {
        throw new NotImplemented(area)
      }
      app.all(`${base}/${family}`, { schema: { hide: true } }, planned)
      app.all(`${base}/${family}/*`, { schema: { hide: true } }, planned)
    }
    for (const [family, service] of FAMILIES) {
      await app.register(proxy, {
        upstream: deps.upstreams[service],
        prefix: `${base}/${family}`,
        rewritePrefix: `/${family}`,
        httpMethods: ['GET', 'POST', 'PATCH', 'PUT', 'DELETE'],
        internalRewriteLocationHeader: false,
        undici: {
          connections: 128,
          pipelining: 1,
          keepAliveTimeout: 30_000,
          headersTimeout: 30_000,
          bodyTimeout: 30_000,
        },
        replyOptions: {
          rewriteRequestHeaders: (req, headers) =>
            forwardHeaders(req as FastifyRequest, headers, base, deps.assertionSecret),
          rewriteHeaders: (headers) => {
            const location = headers.location
            if (typeof location === 'string' && location.startsWith('/')) headers.location = base + location
            return headers
          },
          onError: (reply, { error }) => {
            reply.request.log.warn({ err: error.message, upstream: service }, 'upstream unavailable')
            void sendProblem(
              reply as FastifyReply,
              new UpstreamUnavailable(`The ${service} service is unavailable; retry shortly`),
            )
          },
        },
      })
    }
  }
  return app
}

/** What the upstream sees: no client credentials or tenant hints, a signed assertion instead. */
function forwardHeaders(
  req: FastifyRequest,
  headers: Record<string, string | string[] | undefined>,
  base: string,
  secret: string,
): Record<string, string | string[] | undefined> {
  const out: Record<string, string | string[] | undefined> = {}
  for (const [name, value] of Object.entries(headers)) {
    if (!SPOOFABLE.test(name) && !CREDENTIALS.includes(name.toLowerCase())) out[name] = value
  }
  const principal = req.principal!
  const path = req.url.slice(base.length).split('?')[0]!
  out[ASSERTION_HEADER] = signAssertion(
    { ...principal, requestId: String(req.id), method: req.method, path },
    secret,
  )
  out['x-request-id'] = String(req.id)
  out['x-forwarded-for'] = req.ip
  return out
}
