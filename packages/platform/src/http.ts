import { createHash } from 'node:crypto'
import { BlockList, isIP } from 'node:net'
import { Transform } from 'node:stream'
import Ajv from 'ajv'
import addFormats from 'ajv-formats'
import fp from 'fastify-plugin'
import swagger from '@fastify/swagger'
import {
  LogController,
  type FastifyError,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
  type FastifyServerOptions,
} from 'fastify'
import type { Knex } from 'knex'
import type { Logger } from 'pino'
import { Counter, Histogram, Registry, collectDefaultMetrics } from 'prom-client'
import {
  ASSERTION_HEADER,
  ASSERTION_SKEW_SECONDS,
  ASSERTION_TTL_SECONDS,
  splitUrl,
  verifyAssertion,
} from './assertion'
import type { Ctx } from './context'
import { serviceList } from './service-list'
import {
  AppError,
  HeadersTooLarge,
  InternalError,
  isConnectionError,
  isTransactionConflict,
  NotFound,
  UpstreamUnavailable,
  PayloadTooLarge,
  PROBLEM_CONTENT_TYPE,
  Unauthenticated,
  UnsupportedMediaType,
  ValidationFailed,
  problemBody,
  type FieldError,
} from './errors'
import { ConfigError } from './config'
import { requestIdFrom } from './logging'
import { unsafeTextErrors } from './text'

declare module 'fastify' {
  interface FastifyRequest {
    ctx: Ctx
  }
  interface FastifyContextConfig {
    /** Served without the gateway assertion: health probes. */
    public?: boolean
    /**
     * Served without the assertion only to the internal network (loopback and INTERNAL_NETWORKS),
     * to anyone else only with a valid assertion; others get the 404 of an unknown route: metrics,
     * OpenAPI. No token either at the gateway.
     */
    internal?: boolean
  }
}

export const BODY_LIMIT = 64 * 1024

/**
 * The most a request body to this service path (`/comms/send`, no base, no query) may weigh:
 * BODY_LIMIT unless services.json gives the path a `body_limits` entry. The gateway and the service
 * both read it, so the two agree.
 */
export function bodyLimitOf(servicePath: string): number {
  for (const s of serviceList().services) {
    const limit = s.body_limits?.[servicePath]
    if (limit !== undefined) return limit
  }
  return BODY_LIMIT
}
/** A request slower than this is logged (warn) whatever LOG_LEVEL says, with its route and time. */
const SLOW_REQUEST_MS = 1000
export const VERSION_HEADER = 'X-service-Version'

/**
 * Fastify constructor options every service (and the gateway) shares. URLs the router cannot take
 * (bad percent-encoding, a path parameter over 100 characters) and requests Node's parser refuses
 * (headers over 16 KiB, broken HTTP) are answered as problem+json too, with the version header.
 */
export function fastifyOptions(logger: Logger, version = '') {
  return {
    frameworkErrors: (err: FastifyError, _req: FastifyRequest, reply: FastifyReply) => {
      if (version) reply.header(VERSION_HEADER, version)
      void sendProblem(
        reply,
        err.code === 'FST_ERR_MAX_PARAM_LENGTH'
          ? new NotFound('No such resource')
          : new ValidationFailed([{ path: '/', message: 'is not a valid URL' }], 'The URL is not valid'),
      )
    },
    clientErrorHandler: (err: NodeJS.ErrnoException, socket: import('node:net').Socket) => {
      if (!socket.writable || err.code === 'ECONNRESET') return void socket.destroy()
      const tooLarge = err.code === 'HPE_HEADER_OVERFLOW'
      const appErr = tooLarge
        ? new HeadersTooLarge()
        : new ValidationFailed([{ path: '/', message: 'is not valid HTTP' }], 'The request is not valid HTTP')
      const body = JSON.stringify(problemBody(appErr, 'none'))
      socket.end(
        `HTTP/1.1 ${appErr.status} ${tooLarge ? 'Request Header Fields Too Large' : 'Bad Request'}\r\n` +
          `Content-Type: ${PROBLEM_CONTENT_TYPE}\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
          `${version ? `${VERSION_HEADER}: ${version}\r\n` : ''}Connection: close\r\n\r\n${body}`,
      )
    },
    loggerInstance: logger,
    genReqId: requestIdFrom,
    logController: new LogController({
      requestIdLogLabel: 'request_id',
      // A line per request (two, in and out) only at LOG_LEVEL=debug: the audit trail already
      // records every request, and at info they cost more than the request itself. Errors, refused
      // requests and slow ones are logged by the platform's hooks at every level.
      disableRequestLogging: () => !logger.isLevelEnabled('debug'),
    }),
    bodyLimit: BODY_LIMIT,
    return503OnClosing: true,
    routerOptions: { ignoreTrailingSlash: true },
  } satisfies FastifyServerOptions & { loggerInstance: Logger }
}

export interface AjvError {
  instancePath: string
  keyword: string
  params: Record<string, unknown>
  message?: string
}

/** Ajv errors -> [{path, message}] with JSON pointers and plain messages. */
export function fieldErrors(validation: AjvError[]): FieldError[] {
  const out: FieldError[] = []
  for (const e of validation) {
    const base = e.instancePath
    if (e.keyword === 'required')
      out.push({ path: `${base}/${String(e.params.missingProperty)}`, message: 'is required' })
    else if (e.keyword === 'additionalProperties')
      out.push({ path: `${base}/${String(e.params.additionalProperty)}`, message: 'is not an allowed field' })
    else if (e.keyword === 'format')
      out.push({ path: base, message: `must be a valid ${formatName(String(e.params.format))}` })
    else if (e.keyword === 'enum')
      out.push({ path: base, message: `must be one of: ${(e.params.allowedValues as unknown[]).join(', ')}` })
    else if (e.keyword === 'anyOf' || e.keyword === 'oneOf')
      continue // the branch errors say more
    else out.push({ path: base, message: e.message ?? 'is not valid' })
  }
  // Ajv repeats an error per failed union branch; keep one per path and message.
  return out.filter((e, i) => out.findIndex((o) => o.path === e.path && o.message === e.message) === i)
}

function formatName(format: string): string {
  return (
    { date: 'date (YYYY-MM-DD)', 'date-time': 'RFC 3339 date-time', email: 'email address', uuid: 'UUID' }[
      format
    ] ?? format
  )
}

/** Maps any thrown error onto an AppError with a stable code. */
export function toAppError(err: FastifyError | Error): AppError {
  if (err instanceof AppError) return err
  if (isConnectionError(err)) return new UpstreamUnavailable('The database is temporarily unavailable', 2)
  if (isTransactionConflict(err))
    return new UpstreamUnavailable('The request collided with a concurrent one; nothing was written', 1)
  const fe = err as FastifyError & { validationContext?: string }
  if (fe.validation)
    return new ValidationFailed(
      fieldErrors(fe.validation as unknown as AjvError[]),
      `The ${fe.validationContext === 'querystring' ? 'query string' : (fe.validationContext ?? 'request')} is not valid`,
    )
  switch (fe.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new PayloadTooLarge(BODY_LIMIT)
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new UnsupportedMediaType()
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new ValidationFailed(
        [{ path: '', message: 'body must be valid JSON' }],
        'The body is not valid JSON',
      )
  }
  if (fe.statusCode === 404) return new NotFound()
  if (fe.statusCode && fe.statusCode >= 400 && fe.statusCode < 500)
    return new ValidationFailed([], 'The request is not valid')
  return new InternalError()
}

export function sendProblem(reply: FastifyReply, err: AppError) {
  if (err.headers) reply.headers(err.headers)
  return reply
    .code(err.status)
    .type(PROBLEM_CONTENT_TYPE)
    .send(problemBody(err, String(reply.request.id)))
}

export interface ReadinessCheck {
  name: string
  check: () => Promise<unknown>
}

export interface HttpPluginOptions {
  /** The service's name (services.json): assertions addressed to another service are refused. */
  service: string
  version: string
  /** HMAC secret shared with the gateway; null only in the gateway itself. */
  assertionSecret: string | null
  /**
   * Addresses and CIDR ranges that may read /metrics and /openapi.json without an assertion
   * (INTERNAL_NETWORKS; loopback always may). Default DEFAULT_INTERNAL_NETWORKS.
   */
  internalNetworks?: readonly string[]
  readiness?: ReadinessCheck[]
  description?: string
  /** The service's knex: every statement it sends is counted in `db_statements_total`. */
  knex?: Knex
}

const readinessTimeoutMs = 2000

/**
 * Who may read a service's /metrics and /openapi.json without an assertion, besides loopback: the
 * private ranges of RFC 1918 and IPv6 unique local addresses, where Compose networks, most pod
 * networks and the monitoring stack live. A pod network outside them (100.64.0.0/10 on some CNIs)
 * goes into INTERNAL_NETWORKS.
 */
export const DEFAULT_INTERNAL_NETWORKS = [
  '10.0.0.0/8',
  '172.16.0.0/12',
  '192.168.0.0/16',
  'fc00::/7',
] as const

/** `::ffff:10.1.2.3` (a v4 peer on a dual-stack socket) -> `10.1.2.3`. */
const unmapped = (address: string) => address.replace(/^::ffff:(?=\d+\.\d+\.\d+\.\d+$)/i, '')

/**
 * A matcher for loopback plus `networks` (addresses or CIDR ranges, v4 or v6). A bad entry is a
 * ConfigError naming it (the service stops at start-up: exit 78).
 */
export function internalNetworkMatcher(
  networks: readonly string[],
): (address: string | undefined) => boolean {
  const list = new BlockList()
  list.addSubnet('127.0.0.0', 8, 'ipv4')
  list.addAddress('::1', 'ipv6')
  const bad: string[] = []
  for (const entry of networks) {
    const [address = '', bits, ...rest] = entry.trim().split('/')
    const family = isIP(address)
    const max = family === 6 ? 128 : 32
    const prefix = bits === undefined ? max : /^\d{1,3}$/.test(bits) ? Number(bits) : -1
    if (!family || rest.length || prefix < 0 || prefix > max) bad.push(entry)
    else list.addSubnet(address, prefix, family === 6 ? 'ipv6' : 'ipv4')
  }
  if (bad.length)
    throw new ConfigError(`Invalid configuration: INTERNAL_NETWORKS has bad ranges: ${bad.join(', ')}`)
  return (address) => {
    if (!address) return false
    const a = unmapped(address)
    const family = isIP(a)
    return family !== 0 && list.check(a, family === 6 ? 'ipv6' : 'ipv4')
  }
}

/**
 * Two validators: query strings and path params arrive as text and are coerced ("25" -> 25);
 * JSON bodies are taken as sent, so `"true"` or `null` for a boolean is an error, not a guess.
 * Both refuse unknown fields (never silently dropped) and report every bad field at once.
 */
function validatorCompiler() {
  // allowUnionTypes: nullable fields are `type: [T, 'null']`, one clear error per field.
  const common = {
    removeAdditional: false,
    allErrors: true,
    useDefaults: true,
    allowUnionTypes: true,
    strict: false,
  } as const
  const make = (coerceTypes: false | 'array') => addFormats(new Ajv({ ...common, coerceTypes }))
  const body = make(false)
  const text = make('array')
  return ({ schema, httpPart }: { schema: object; httpPart?: string }) =>
    (httpPart === 'body' ? body : text).compile(schema)
}

/** One 'query' listener per knex (tests build many apps on one), feeding each app's counter. */
const statementCounters = new WeakMap<Knex, Set<Counter>>()
function countStatements(knex: Knex, counter: Counter) {
  let counters = statementCounters.get(knex)
  if (!counters) {
    const set = new Set<Counter>()
    statementCounters.set(knex, set)
    knex.on('query', () => {
      for (const c of set) c.inc()
    })
    counters = set
  }
  counters.add(counter)
}

async function platformHttp(app: FastifyInstance, opts: HttpPluginOptions) {
  const isInternal = internalNetworkMatcher(opts.internalNetworks ?? DEFAULT_INTERNAL_NETWORKS)
  app.setValidatorCompiler(validatorCompiler())
  app.decorateRequest('ctx', null as unknown as Ctx)
  app.decorateRequest('assertedBodyHash', undefined)
  app.decorateRequest('receivedBodyHash', undefined)
  // JSON only: anything else is 415, as in the gateway.
  app.removeContentTypeParser('text/plain')

  const metrics = new Registry()
  metrics.setDefaultLabels({ service: opts.service })
  collectDefaultMetrics({ register: metrics })
  const httpDuration = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'HTTP request duration by route and status',
    labelNames: ['method', 'route', 'status'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [metrics],
  })
  app.decorate('metrics', metrics)
  if (opts.knex) {
    // Statements sent to PostgreSQL (BEGIN and COMMIT included): the bench divides by requests.
    const statements = new Counter({
      name: 'db_statements_total',
      help: 'SQL statements sent to the database, transaction control included',
      registers: [metrics],
    })
    countStatements(opts.knex, statements)
    app.addHook('onClose', async () => statementCounters.get(opts.knex!)?.delete(statements))
  }

  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: { title: `clinic ${opts.service}`, version: opts.version, description: opts.description },
    },
  })

  // The gateway's assertion, bound to this request (method, path, query, body hash) and used once:
  // a captured header is refused the second time, and after its seconds are up anyway.
  const usedJti = new Map<string, number>()
  const sweep = setInterval(() => {
    const now = Date.now()
    for (const [jti, exp] of usedJti) if (exp < now) usedJti.delete(jti)
  }, ASSERTION_TTL_SECONDS * 1000)
  sweep.unref()
  app.addHook('onClose', async () => clearInterval(sweep))
  const refuse = (req: FastifyRequest, reason: string) => {
    req.log.warn({ cause: reason }, 'request without a valid gateway assertion')
    return new Unauthenticated('Requests must come through the gateway')
  }
  const verified = (req: FastifyRequest, secret: string) => {
    const result = verifyAssertion(req.headers[ASSERTION_HEADER] as string | undefined, secret, {
      method: req.method,
      ...splitUrl(req.url),
      audience: opts.service,
    })
    if (!result.ok) return result
    if (usedJti.has(result.claims.jti)) return { ok: false as const, reason: 'replayed' }
    usedJti.set(result.claims.jti, (result.claims.exp + ASSERTION_SKEW_SECONDS) * 1000)
    return result
  }
  app.addHook('onRequest', async (req: FastifyRequest) => {
    // Metrics and OpenAPI: to the internal network, or with an assertion; to anyone else they do
    // not exist (the 404 of an unknown route, nothing to tell them apart).
    if (req.routeOptions.config?.internal) {
      if (isInternal(req.ip)) return
      const result = opts.assertionSecret === null ? null : verified(req, opts.assertionSecret)
      if (result?.ok) return
      req.log.info({ cause: result?.reason ?? 'not internal' }, 'internal route asked from outside')
      throw new NotFound('No such route')
    }
    if (req.routeOptions.config?.public || opts.assertionSecret === null) return
    const result = verified(req, opts.assertionSecret)
    if (!result.ok) throw refuse(req, result.reason)
    const { companyId, userId, username, tokenId, companyCenters, allowedCenters } = result.claims
    const auth = { companyId, userId, username, tokenId, companyCenters, allowedCenters }
    req.assertedBodyHash = result.claims.bodyHash ?? ''
    req.ctx = {
      auth,
      log: req.log.child({ company_id: auth.companyId }) as unknown as Logger,
      requestId: String(req.id),
    }
  })
  // The body's hash as it arrives, whatever parses it, checked against the assertion's.
  app.addHook('preParsing', async (req, _reply, payload) => {
    if (req.assertedBodyHash === undefined) return payload
    const hash = createHash('sha256')
    let length = 0
    const hashed = new Transform({
      transform(chunk: Buffer, _enc, done) {
        hash.update(chunk)
        length += chunk.length
        done(null, chunk)
      },
      flush(done) {
        req.receivedBodyHash = length ? hash.digest('base64url') : ''
        done()
      },
    })
    ;(hashed as unknown as { receivedEncodedLength?: number }).receivedEncodedLength = (
      payload as unknown as { receivedEncodedLength?: number }
    ).receivedEncodedLength
    return payload.pipe(hashed)
  })
  app.addHook('preValidation', async (req: FastifyRequest) => {
    if (req.assertedBodyHash === undefined) return
    if ((req.receivedBodyHash ?? '') !== req.assertedBodyHash) throw refuse(req, 'body')
  })

  // NUL and unpaired surrogates, in any string of the path, query or body (field names too): a 400
  // naming the field, for every route and whatever its schema says, before a database sees them.
  app.addHook('preValidation', async (req: FastifyRequest) => {
    const errors = [
      ...unsafeTextErrors(req.params),
      ...unsafeTextErrors(req.query),
      ...unsafeTextErrors(req.body),
    ]
    if (errors.length) throw new ValidationFailed(errors, 'The request contains text that cannot be accepted')
  })

  // Once closing (from the start of the drain, see serve()), readiness answers 503 so that load
  // balancers stop sending, and answers close their keep-alive connection: otherwise a connection
  // busy when close() began stays open afterwards and holds the shutdown until the grace period.
  let closing = false
  app.decorate('beginClosing', () => {
    closing = true
  })
  app.addHook('preClose', async () => {
    closing = true
  })
  app.addHook('onSend', async (req, reply) => {
    reply.header(VERSION_HEADER, opts.version)
    reply.header('x-request-id', req.id)
    if (closing) reply.header('connection', 'close')
  })

  app.addHook('onResponse', async (req, reply) => {
    if (reply.elapsedTime >= SLOW_REQUEST_MS)
      req.log.warn(
        {
          method: req.method,
          route: req.routeOptions.url,
          status: reply.statusCode,
          ms: Math.round(reply.elapsedTime),
        },
        'slow request',
      )
    httpDuration.observe(
      { method: req.method, route: req.routeOptions.url ?? 'unmatched', status: String(reply.statusCode) },
      reply.elapsedTime / 1000,
    )
  })

  app.setErrorHandler((err: FastifyError, req, reply) => {
    const appErr = toAppError(err)
    // A client that hung up mid-answer (a load generator stopping, a closed tab) is not our error.
    if (req.raw.destroyed || reply.raw.destroyed)
      req.log.info({ code: (err as { code?: string }).code }, 'client closed the connection')
    else if (appErr.status >= 500) req.log.error({ err }, 'request failed')
    else req.log.info({ code: appErr.code }, 'request refused')
    return sendProblem(reply, appErr)
  })
  app.setNotFoundHandler((req, reply) => sendProblem(reply, new NotFound('No such route')))

  const hidden = { hide: true }
  app.get('/health/live', { config: { public: true }, schema: hidden }, async () => ({ status: 'ok' }))
  app.get('/health/ready', { config: { public: true }, schema: hidden }, async (req, reply) => {
    if (closing) return reply.code(503).send({ status: 'closing', checks: {} })
    const checks: Record<string, string> = {}
    await Promise.all(
      (opts.readiness ?? []).map(async ({ name, check }) => {
        try {
          await Promise.race([
            check(),
            new Promise((_, reject) =>
              setTimeout(() => reject(new Error('timeout')), readinessTimeoutMs).unref(),
            ),
          ])
          checks[name] = 'ok'
        } catch (err) {
          checks[name] = 'down'
          req.log.warn({ check: name, err }, 'readiness check failed')
        }
      }),
    )
    const ok = Object.values(checks).every((s) => s === 'ok')
    return reply.code(ok ? 200 : 503).send({ status: ok ? 'ok' : 'unavailable', checks })
  })
  app.get('/metrics', { config: { internal: true }, schema: hidden }, async (_req, reply) =>
    reply.type(metrics.contentType).send(await metrics.metrics()),
  )
  app.get('/openapi.json', { config: { internal: true }, schema: hidden }, async () => app.swagger())
}

declare module 'fastify' {
  interface FastifyRequest {
    /** The body hash the gateway's assertion names ('' without a body); unset on public routes. */
    assertedBodyHash?: string
    /** The hash of the body as it arrived. */
    receivedBodyHash?: string
  }
  interface FastifyInstance {
    metrics: Registry
    /** Readiness answers 503 and answers close their connections from now on (the drain). */
    beginClosing(): void
  }
}

export const http = fp(platformHttp, { name: 'clinic-platform-http', fastify: '5.x' })

/**
 * Listens, then on SIGTERM/SIGINT shuts down in order: readiness turns 503 at once while requests
 * are still served for `drainMs` (load balancers take the instance out; connections already open
 * get their requests answered, each with `Connection: close`), then the server closes and waits for
 * the requests in flight, then `stops` run (consumers, workers) and the connections close.
 */
export async function serve(
  app: Pick<FastifyInstance, 'listen' | 'close' | 'beginClosing'>,
  o: {
    port: number
    config: { HOST: string; SHUTDOWN_DRAIN_MS: number; SHUTDOWN_GRACE_MS: number }
    infra: { logger: Logger; close(): Promise<void> }
    stops?: Array<() => Promise<unknown>>
  },
): Promise<void> {
  await app.listen({ port: o.port, host: o.config.HOST })
  const drain = async () => {
    app.beginClosing()
    await new Promise((r) => setTimeout(r, o.config.SHUTDOWN_DRAIN_MS))
  }
  onShutdown(
    o.infra.logger,
    [drain, () => app.close(), ...(o.stops ?? []), () => o.infra.close()],
    o.config.SHUTDOWN_GRACE_MS,
  )
}

/**
 * SIGTERM/SIGINT: run `steps` in order, then exit 0. The same signal a second time forces the
 * exit, and so does the end of the grace period (SHUTDOWN_GRACE_MS, default 25 s: inside
 * Compose's 30 s and Kubernetes' 45 s).
 */
function onShutdown(log: Logger, steps: Array<() => Promise<unknown>>, graceMs = 25_000) {
  let closing: string | null = null
  const stop = async (signal: string) => {
    // Ctrl-C under `npm start` delivers SIGINT from the terminal and SIGTERM from the runner: one
    // shutdown. The same signal twice means "now".
    if (closing === signal) {
      log.warn({ signal }, 'second signal: exiting without draining')
      process.exit(1)
    }
    if (closing) return
    closing = signal
    log.info({ signal, grace_ms: graceMs }, 'shutting down')
    setTimeout(() => {
      log.error({ grace_ms: graceMs }, 'grace period over: exiting with work unfinished')
      process.exit(1)
    }, graceMs).unref()
    for (const step of steps) {
      try {
        await step()
      } catch (err) {
        log.error({ err }, 'shutdown step failed')
      }
    }
    log.info('stopped')
    process.exit(0)
  }
  process.on('SIGTERM', () => void stop('SIGTERM'))
  process.on('SIGINT', () => void stop('SIGINT'))
}
