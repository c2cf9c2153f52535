import type { FastifyReply, FastifyRequest } from 'fastify'
import { Readable, Transform } from 'node:stream'
import {
  BODY_LIMIT,
  PayloadTooLarge,
  ASSERTION_HEADER,
  requestClaims,
  routeConfig,
  signAssertionInBatch,
  traceOf,
  type AssertionBatcher,
  type AssertionSigner,
} from '@clinic/platform'
import { uploadLimitOf } from '../plugins/body-guards'

// What the gateway does to a request on its way to a service: the body read (or streamed), the
// assertion signed, the headers the service may see.

/**
 * Headers a client must never set for itself: tenant hints, internal assertions, and what proxies
 * say about the request (forwarded host, address or original URL: the gateway sets
 * X-Forwarded-For itself, from the address it trusts).
 */
const SPOOFABLE =
  /^(x-clinic-|x-idempresa|idempresa|x-empresa|x-tenant|x-company|x-user|x-forwarded-|forwarded$|x-real-ip$|x-original-url$|x-rewrite-url$|x-original-uri$)/i
// Between the client and the gateway only: the gateway has read the body already (undici refuses an
// `expect` header outright, which answered 503), and connections are per hop. And credentials. The
// trace context goes on as the gateway's own (its request's server span, child of the client's).
const NOT_FORWARDED = new Set([
  'traceparent',
  'tracestate',
  'authorization',
  'x-service-token',
  'cookie',
  'expect',
  'connection',
  'keep-alive',
  'upgrade',
  'te',
  'trailer',
  'proxy-connection',
])
/** How a request is forwarded to one service under one base ('' for pages). */
export interface Forward {
  base: string
  service: string
  /** Its requests carry the company's and centers' names (services.json `names`). */
  names?: boolean
  /** FHIR routes: the absolute FHIR base the client reached, sent as FHIR_BASE_HEADER. */
  fhirBase?: string
  signer: AssertionSigner
  batcher: AssertionBatcher
}

/**
 * What the upstream sees: no client credentials or tenant hints, a signed assertion instead,
 * addressed to the family's service (another service refuses it), and the gateway's span as the
 * parent of the service's (`traceparent`).
 */
export function forwardHeaders(
  req: FastifyRequest,
  headers: Record<string, string | string[] | undefined>,
): Record<string, string | string[] | undefined> {
  const out: Record<string, string | string[] | undefined> = {}
  // Node gives header names in lower case; a name that is not is lowered to be checked.
  for (const name in headers) {
    if (!NOT_FORWARDED.has(name.toLowerCase()) && !SPOOFABLE.test(name)) out[name] = headers[name]
  }
  if (req.assertion) out[ASSERTION_HEADER] = req.assertion
  out['x-request-id'] = String(req.id)
  const trace = traceOf(req.span)
  out.traceparent = trace.traceparent
  if (trace.tracestate) out.tracestate = trace.tracestate
  out['x-forwarded-for'] = req.ip
  return out
}

declare module 'fastify' {
  interface FastifyRequest {
    /** The request body as it is forwarded (prepareForward), for the assertion's body hash. */
    rawBody?: Buffer
    /** The assertion forwarded with the request (prepareForward), when it has a principal. */
    assertion?: string
  }
}

/**
 * Before a request is forwarded: its body read (readBody), then its assertion signed, which the
 * proxy sends (forwardHeaders).
 */
export function prepareForward(o: Forward) {
  return (req: FastifyRequest, _reply: FastifyReply, done: (err?: Error) => void) => {
    // The assertion, bound to the path and query as the service receives them and to the body as
    // buffered; signed with the other requests of this turn of the event loop (AssertionBatcher).
    const sign = (streamed = false) => {
      if (!req.principal) return done()
      const claims = requestClaims(
        { auth: (o.names && req.namedPrincipal) || req.principal, requestId: String(req.id) },
        {
          method: req.method,
          path: req.url.slice(o.base.length),
          body: req.rawBody,
          audience: o.service,
          streamed,
        },
      )
      signAssertionInBatch(claims, o.signer, o.batcher).then((token) => {
        req.assertion = token
        done()
      }, done)
    }
    // An upload streams on unread, counted (streamedUpload); its assertion names no body hash.
    const upload = uploadLimitOf(req)
    if (upload !== undefined && req.body instanceof Readable) {
      req.body = streamedUpload(req.body, upload)
      return sign(true)
    }
    if (!(req.body instanceof Readable)) return sign()
    // A throw in sign goes to done too: never an unhandled rejection.
    readBody(req, req.body)
      .then(() => sign())
      .catch(done)
  }
}

/**
 * An upload's body as it is forwarded: passed on chunk by chunk as it arrives (never held whole,
 * never spooled), and cut off with an error once more than `limit` bytes have come, which ends the
 * forward (a Content-Length over the limit was refused before: body-guards).
 */
function streamedUpload(body: Readable, limit: number): Readable {
  let size = 0
  const counted = new Transform({
    transform(chunk: Buffer, _enc, next) {
      size += chunk.length
      if (size > limit) return next(new PayloadTooLarge(limit))
      next(null, chunk)
    },
  })
  body.on('error', (err) => counted.destroy(err))
  return body.pipe(counted)
}

/**
 * Reads a request body (64 KiB at most, or the route's own limit; chunked or not) before it is
 * forwarded, so that the assertion can carry its hash; the proxy then sends exactly these bytes.
 */
async function readBody(req: FastifyRequest, body: Readable) {
  const limit = routeConfig(req).bodyLimit ?? BODY_LIMIT
  const chunks: Buffer[] = []
  let size = 0
  for await (const chunk of body as AsyncIterable<Buffer>) {
    size += chunk.length
    if (size > limit) throw new PayloadTooLarge(limit)
    chunks.push(chunk)
  }
  req.rawBody = Buffer.concat(chunks)
  req.body = Readable.from([req.rawBody])
}
