import { createHash } from 'node:crypto'
import { Transform } from 'node:stream'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { Logger } from 'pino'
import {
  ASSERTION_HEADER,
  STREAMED_BODY,
  ASSERTION_SKEW_SECONDS,
  ASSERTION_TTL_SECONDS,
  splitUrl,
  verifyAssertion,
  type Principal,
  type VerifyResult,
} from '../assertion'
import { GATEWAY_ISSUER, type AssertionKeys } from '../assertion-keys'
import type { Ctx } from '../context'
import { NotFound, Unauthenticated } from '../errors'
import { lazyChild } from '../logging'
import { traceOf } from '../tracing'
import { routeConfig } from './route-config'

declare module 'fastify' {
  interface FastifyRequest {
    ctx: Ctx
    /** The body hash the gateway's assertion names ('' without a body); unset on public routes. */
    assertedBodyHash?: string
    /** The hash of the body as it arrived. */
    receivedBodyHash?: string
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
    /**
     * The services that may call this internal route with an assertion of their own
     * (SERVICE_SIGNING_KEY), on behalf of their caller; the gateway's assertions are refused here.
     * Without it, a route takes the gateway's assertions only.
     */
    callers?: readonly string[]
    /**
     * Takes an upload the gateway streams on unread (services.json `uploads`): its assertion names
     * no body hash (STREAMED_BODY), and the route reads and checks the body itself as it arrives.
     */
    streamedBody?: boolean
  }
}

export interface AssertionHookOptions {
  service: string
  /** The gateway's public key and the callers' (by issuer); null only in the gateway itself. */
  assertionKeys: AssertionKeys | null
  isInternal: (address: string | undefined) => boolean
}

/** Assertion ids seen while they are valid: a captured header is refused the second time. */
function replayGuard(app: FastifyInstance) {
  const used = new Map<string, number>()
  const sweep = setInterval(() => {
    const now = Date.now()
    for (const [jti, exp] of used) if (exp < now) used.delete(jti)
  }, ASSERTION_TTL_SECONDS * 1000)
  sweep.unref()
  app.addHook('onClose', async () => clearInterval(sweep))
  return (jti: string, exp: number) => {
    if (used.has(jti)) return false
    used.set(jti, (exp + ASSERTION_SKEW_SECONDS) * 1000)
    return true
  }
}

/** An upload the gateway streams on unread, to a route that reads and checks it itself. */
const streamed = (req: FastifyRequest) =>
  req.assertedBodyHash === STREAMED_BODY && routeConfig(req).streamedBody === true

/** A Transform that passes the body on and leaves its hash in `req.receivedBodyHash`. */
function bodyHasher(req: FastifyRequest, payload: NodeJS.ReadableStream) {
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
}

/**
 * The gateway's assertion, bound to this request (audience, method, path, query, body hash) and
 * used once; it becomes `req.ctx`. Internal routes (metrics, OpenAPI) answer the internal network
 * or an asserted request, and are an unknown route to anyone else.
 */
/** `f` of a value, or of a promise's value once it settles: no promise made for a value at hand. */
const then = <A, B>(x: A | Promise<A>, f: (a: A) => B): B | Promise<B> =>
  x instanceof Promise ? x.then(f) : f(x)

export function assertionHooks(app: FastifyInstance, o: AssertionHookOptions) {
  app.decorateRequest('ctx', null as unknown as Ctx)
  app.decorateRequest('assertedBodyHash', undefined)
  app.decorateRequest('receivedBodyHash', undefined)
  const firstUse = replayGuard(app)
  const refuse = (req: FastifyRequest, reason: string) => {
    req.log.warn({ cause: reason }, 'request without a valid gateway assertion')
    return new Unauthenticated('Requests must come through the gateway')
  }
  /** The verified assertion allowed on this route, used once; or why not. */
  const allowed = (req: FastifyRequest, result: VerifyResult): VerifyResult => {
    if (!result.ok) return result
    // The gateway everywhere but on the routes that name their callers; a caller only there.
    const callers = routeConfig(req).callers
    const issuer = result.claims.iss
    if (callers ? !callers.includes(issuer) : issuer !== GATEWAY_ISSUER)
      return { ok: false as const, reason: `issuer ${issuer} not allowed on this route` }
    if (!firstUse(result.claims.jti, result.claims.exp)) return { ok: false as const, reason: 'replayed' }
    return result
  }
  const verified = (req: FastifyRequest, keys: AssertionKeys) =>
    then(
      verifyAssertion(req.headers[ASSERTION_HEADER] as string | undefined, keys, {
        method: req.method,
        ...splitUrl(req.url),
        audience: o.service,
      }),
      (result) => allowed(req, result),
    )
  /** The principal of an admitted request into `req.ctx`, or the error it is refused with. */
  const admitted = (req: FastifyRequest, result: VerifyResult): Error | undefined => {
    if (!result.ok) return refuse(req, result.reason)
    const { companyId, userId, username, tokenId, companyCenters, allowedCenters, names } = result.claims
    const auth: Principal = { companyId, userId, username, tokenId, companyCenters, allowedCenters }
    if (names) auth.names = names
    req.assertedBodyHash = result.claims.bodyHash ?? ''
    req.ctx = {
      auth,
      log: lazyChild(req.log as unknown as Logger, { company_id: auth.companyId }),
      requestId: String(req.id),
      ...traceOf(req.span),
    }
  }
  const internalOnly = (req: FastifyRequest, result: VerifyResult | null): Error | undefined => {
    if (result?.ok) return
    req.accessNote = { cause: result?.reason ?? 'not internal' }
    return new NotFound('No such route')
  }
  /** undefined when the request may go on, or the error it is refused with (a promise while jose checks). */
  const admit = (req: FastifyRequest): Error | undefined | Promise<Error | undefined> => {
    const config = routeConfig(req)
    if (config.internal) {
      if (o.isInternal(req.ip)) return
      if (o.assertionKeys === null) return internalOnly(req, null)
      return then(verified(req, o.assertionKeys), (result) => internalOnly(req, result))
    }
    if (config.public || o.assertionKeys === null) return
    return then(verified(req, o.assertionKeys), (result) => admitted(req, result))
  }
  // Callback hooks (an async hook costs a promise per request): a promise only while jose checks a
  // signature, once per batch of the gateway's.
  app.addHook('onRequest', (req, _reply, done) => {
    const admitting = admit(req)
    if (admitting instanceof Promise) admitting.then(done, done)
    else done(admitting)
  })
  // Without keys (the gateway) no request has an assertion, so no body hash to check.
  if (o.assertionKeys !== null) bodyHashHooks(app, refuse)
}

/** The body's hash as it arrives, whatever parses it, checked against the assertion's. */
function bodyHashHooks(app: FastifyInstance, refuse: (req: FastifyRequest, reason: string) => Error) {
  app.addHook('preParsing', (req, _reply, payload, done) => {
    if (req.assertedBodyHash === undefined || streamed(req)) return done(null, payload)
    // Without Content-Length or Transfer-Encoding a request has no body (RFC 9112 6.3): nothing to
    // hash (every GET the gateway forwards).
    if (req.headers['transfer-encoding'] === undefined && !Number(req.headers['content-length'] ?? 0)) {
      req.receivedBodyHash = ''
      return done(null, payload)
    }
    done(null, bodyHasher(req, payload))
  })
  app.addHook('preValidation', (req, _reply, done) => {
    if (req.assertedBodyHash === undefined || streamed(req)) return done()
    done((req.receivedBodyHash ?? '') !== req.assertedBodyHash ? refuse(req, 'body') : undefined)
  })
}
