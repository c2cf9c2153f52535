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
import type { Logger } from 'pino'
import { Histogram, Registry, collectDefaultMetrics } from 'prom-client'
import { ASSERTION_HEADER, verifyAssertion } from './assertion'
import type { Ctx } from './context'
import {
  AppError,
  InternalError,
  NotFound,
  PayloadTooLarge,
  PROBLEM_CONTENT_TYPE,
  Unauthenticated,
  UnsupportedMediaType,
  ValidationFailed,
  problemBody,
  type FieldError,
} from './errors'
import { requestIdFrom } from './logging'

declare module 'fastify' {
  interface FastifyRequest {
    ctx: Ctx
  }
  interface FastifyContextConfig {
    /** Served without the gateway assertion: health, metrics, OpenAPI. */
    public?: boolean
  }
}

export const BODY_LIMIT = 64 * 1024
export const VERSION_HEADER = 'X-service-Version'

/** Fastify constructor options every service (and the gateway) shares. */
export function fastifyOptions(logger: Logger) {
  return {
    loggerInstance: logger,
    genReqId: requestIdFrom,
    logController: new LogController({ requestIdLogLabel: 'request_id' }),
    bodyLimit: BODY_LIMIT,
    return503OnClosing: true,
    routerOptions: { ignoreTrailingSlash: true },
  } satisfies FastifyServerOptions & { loggerInstance: Logger }
}

interface AjvError {
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
  service: string
  version: string
  /** HMAC secret shared with the gateway; null only in the gateway itself. */
  assertionSecret: string | null
  readiness?: ReadinessCheck[]
  description?: string
}

const readinessTimeoutMs = 2000

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

async function platformHttp(app: FastifyInstance, opts: HttpPluginOptions) {
  app.setValidatorCompiler(validatorCompiler())
  app.decorateRequest('ctx', null as unknown as Ctx)
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

  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: { title: `clinic ${opts.service}`, version: opts.version, description: opts.description },
    },
  })

  app.addHook('onRequest', async (req: FastifyRequest) => {
    if (req.routeOptions.config?.public || opts.assertionSecret === null) return
    const result = verifyAssertion(
      req.headers[ASSERTION_HEADER] as string | undefined,
      opts.assertionSecret,
      {
        method: req.method,
        path: req.url.split('?')[0]!,
      },
    )
    if (!result.ok) {
      req.log.warn({ cause: result.reason }, 'request without a valid gateway assertion')
      throw new Unauthenticated('Requests must come through the gateway')
    }
    const { companyId, userId, username, tokenId, companyCenters, allowedCenters } = result.claims
    const auth = { companyId, userId, username, tokenId, companyCenters, allowedCenters }
    req.ctx = {
      auth,
      log: req.log.child({ company_id: auth.companyId }) as unknown as Logger,
      requestId: String(req.id),
    }
  })

  app.addHook('onSend', async (req, reply) => {
    reply.header(VERSION_HEADER, opts.version)
    reply.header('x-request-id', req.id)
  })

  app.addHook('onResponse', async (req, reply) => {
    httpDuration.observe(
      { method: req.method, route: req.routeOptions.url ?? 'unmatched', status: String(reply.statusCode) },
      reply.elapsedTime / 1000,
    )
  })

  app.setErrorHandler((err: FastifyError, req, reply) => {
    const appErr = toAppError(err)
    if (appErr.status >= 500) req.log.error({ err }, 'request failed')
    else req.log.info({ code: appErr.code }, 'request refused')
    return sendProblem(reply, appErr)
  })
  app.setNotFoundHandler((req, reply) => sendProblem(reply, new NotFound('No such route')))

  const hidden = { hide: true }
  app.get('/health/live', { config: { public: true }, schema: hidden }, async () => ({ status: 'ok' }))
  app.get('/health/ready', { config: { public: true }, schema: hidden }, async (req, reply) => {
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
  app.get('/metrics', { config: { public: true }, schema: hidden }, async (_req, reply) =>
    reply.type(metrics.contentType).send(await metrics.metrics()),
  )
  app.get('/openapi.json', { config: { public: true }, schema: hidden }, async () => app.swagger())
}

declare module 'fastify' {
  interface FastifyInstance {
    metrics: Registry
  }
}

export const http = fp(platformHttp, { name: 'clinic-platform-http', fastify: '5.x' })

/**
 * SIGTERM/SIGINT: stop taking work, let in-flight requests and messages finish, then close
 * connections in order. The same signal a second time forces the exit.
 */
export function onShutdown(log: Logger, steps: Array<() => Promise<unknown>>) {
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
    log.info({ signal }, 'shutting down')
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
