import { assertionHeaders } from './assertion'
import type { Ctx } from './context'
import { UpstreamUnavailable } from './errors'

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
}

export interface ServiceAnswer<T> {
  status: number
  /** The parsed JSON body (a problem+json for 4xx), or null when there is none. */
  body: T | null
}

/**
 * A signed call to another service on behalf of the caller in `ctx`: the callee sees the same
 * company, user, centers and request id as the caller, and checks the assertion like the gateway's.
 * Answers 2xx and 4xx are returned for the caller's adapter to interpret; a service that cannot be
 * reached, times out or fails (5xx) is `UpstreamUnavailable` (503 with Retry-After), so nothing
 * is written on a guess. Adapters to one service live in the calling service, behind a domain
 * interface; this is only the transport.
 */
export async function callService<T>(
  ctx: Pick<Ctx, 'auth' | 'requestId' | 'log'>,
  secret: string,
  call: ServiceCall,
): Promise<ServiceAnswer<T>> {
  const unavailable = () =>
    new UpstreamUnavailable(`The ${call.service} service is unavailable; retry shortly`)
  // The assertion covers the exact bytes sent, and is addressed to the callee alone.
  const sent = call.body === undefined ? undefined : JSON.stringify(call.body)
  const headers: Record<string, string> = {
    ...assertionHeaders(
      ctx,
      { method: call.method, path: call.path, body: sent, audience: call.service },
      secret,
    ),
    accept: 'application/json',
  }
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
  return { status: res.status, body }
}
