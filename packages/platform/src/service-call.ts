import type { TSchema } from '@sinclair/typebox'
import { Value } from '@sinclair/typebox/value'
import { assertionHeaders } from './assertion'
import type { AssertionSigner } from './assertion-keys'
import type { Ctx } from './context'
import { UpstreamUnavailable } from './errors'
import {
  ATTR_HTTP_REQUEST_METHOD,
  ATTR_HTTP_RESPONSE_STATUS_CODE,
  ATTR_SERVER_ADDRESS,
} from '@opentelemetry/semantic-conventions'
import { SpanKind, endSpan, startSpan, traceOf, tracingOn } from './tracing'

export interface ServiceCall {
  /** The called service's name (services.json): the assertion's audience, and for errors and logs. */
  service: string
  /** Its base URL, e.g. config.PATIENTS_URL. */
  baseUrl: string
  method: 'GET' | 'POST' | 'PATCH'
  /** Path and query string, e.g. `/internal/patients/<id>`. */
  path: string
  body?: unknown
  timeoutMs?: number
  /**
   * The schema a 2xx answer must meet (extra fields allowed): one that does not is treated as a
   * failing upstream, never taken on trust.
   */
  answer?: TSchema
}

export interface ServiceAnswer<T> {
  status: number
  /** The parsed JSON body (a problem+json for 4xx), or null when there is none. */
  body: T | null
}

/**
 * A signed call to another service on behalf of the caller in `ctx`: the callee sees the same
 * company, user, centers and request id as the caller. The assertion is signed with the calling
 * service's own key (`signer`), which the callee accepts only on the internal routes naming it.
 * Answers 2xx (checked against `answer`) and 4xx are returned for the caller's adapter to interpret;
 * a service that cannot be reached, times out, fails (5xx) or answers off-schema is
 * `UpstreamUnavailable` (503 with Retry-After), so nothing is written on a guess. Adapters to one service live in the calling service, behind a domain
 * interface; this is only the transport.
 */
export async function callService<T>(
  ctx: Pick<Ctx, 'auth' | 'requestId' | 'log' | 'traceparent' | 'tracestate'>,
  signer: AssertionSigner,
  call: ServiceCall,
): Promise<ServiceAnswer<T>> {
  // The callee's server span is the child of the caller's span: of a client span of the call
  // while spans are recorded, else of the caller's own.
  if (!tracingOn()) return send(ctx, signer, call, ctx)
  const span = startSpan(`${call.method} ${call.service}`, {
    kind: SpanKind.CLIENT,
    parent: ctx,
    attributes: { [ATTR_HTTP_REQUEST_METHOD]: call.method, [ATTR_SERVER_ADDRESS]: call.service },
  })
  try {
    const answer = await send<T>(ctx, signer, call, traceOf(span))
    span.setAttribute(ATTR_HTTP_RESPONSE_STATUS_CODE, answer.status)
    endSpan(span)
    return answer
  } catch (err) {
    endSpan(span, err)
    throw err
  }
}

async function send<T>(
  ctx: Pick<Ctx, 'auth' | 'requestId' | 'log'>,
  signer: AssertionSigner,
  call: ServiceCall,
  trace: Pick<Ctx, 'traceparent' | 'tracestate'>,
): Promise<ServiceAnswer<T>> {
  const unavailable = () =>
    new UpstreamUnavailable(`The ${call.service} service is unavailable; retry shortly`)
  // The assertion covers the exact bytes sent, and is addressed to the callee alone.
  const sent = call.body === undefined ? undefined : JSON.stringify(call.body)
  const headers: Record<string, string> = {
    ...(await assertionHeaders(
      ctx,
      { method: call.method, path: call.path, body: sent, audience: call.service },
      signer,
    )),
    accept: 'application/json',
  }
  if (trace.traceparent) headers.traceparent = trace.traceparent
  if (trace.tracestate) headers.tracestate = trace.tracestate
  if (sent !== undefined) headers['content-type'] = 'application/json'
  let res: Response
  try {
    res = await fetch(new URL(call.path, call.baseUrl), {
      method: call.method,
      headers,
      body: sent,
      signal: AbortSignal.timeout(call.timeoutMs ?? 5000),
    })
  } catch (err) {
    ctx.log.warn({ service: call.service, err: (err as Error).message }, 'service call failed')
    throw unavailable()
  }
  if (res.status >= 500) {
    ctx.log.warn({ service: call.service, status: res.status }, 'service call answered an error')
    await res.body?.cancel()
    throw unavailable()
  }
  const text = await res.text()
  let body: T | null = null
  if (text) {
    try {
      body = JSON.parse(text) as T
    } catch {
      throw unavailable()
    }
  }
  if (call.answer && res.status < 300 && !Value.Check(call.answer, body)) {
    ctx.log.warn({ service: call.service, status: res.status }, 'service answer does not match its schema')
    throw unavailable()
  }
  return { status: res.status, body }
}

/**
 * One record of another service by its internal lookup route (`GET /internal/<resource>/<id>`), on
 * behalf of the caller: the body when 200 (checked against `answer`), null when 404 (the assertion
 * carries the caller's company, so another company's record is a 404 like a missing one). Any other
 * answer is a failing upstream (503), as are the failures `callService` names.
 */
export async function lookUp<T>(
  ctx: Pick<Ctx, 'auth' | 'requestId' | 'log' | 'traceparent' | 'tracestate'>,
  signer: AssertionSigner,
  call: Omit<ServiceCall, 'method' | 'body' | 'answer'> & { answer: TSchema },
): Promise<T | null> {
  const answer = await callService<T>(ctx, signer, { ...call, method: 'GET' })
  if (answer.status === 200 && answer.body !== null) return answer.body
  if (answer.status === 404) return null
  ctx.log.warn(
    { upstream: call.service, status: answer.status },
    `unexpected answer to a ${call.service} lookup`,
  )
  throw new UpstreamUnavailable(`The ${call.service} service is unavailable; retry shortly`)
}
