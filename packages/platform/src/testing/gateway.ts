import type { InjectOptions, LightMyRequestResponse } from 'fastify'
import { assertionHeaders, type Principal } from '../assertion'

let nextCompany = Math.floor(Math.random() * 1_000_000) * 100 + 1_000_000
/** A company id no other test in this run uses (tests share one database). */
export const freshCompanyId = () => nextCompany++

export function testPrincipal(overrides: Partial<Principal> = {}): Principal {
  return {
    companyId: overrides.companyId ?? freshCompanyId(),
    userId: '0190c5a0-0000-7000-8000-000000000001',
    username: 'test-user',
    tokenId: '0190c5a0-0000-7000-8000-000000000002',
    companyCenters: ['ALM1', 'ALM2'],
    allowedCenters: null,
    ...overrides,
  }
}

/**
 * Headers that make an `app.inject` call look like it came through the gateway: an assertion for
 * this method, URL (query included) and body (an object is sent as JSON.stringify, as inject does),
 * addressed to `audience` (default: the service owning the URL's path family).
 */
export function gatewayHeaders(
  principal: Principal,
  method: string,
  url: string,
  secret = process.env.INTERNAL_AUTH_SECRET ?? 'test-secret-0123456789abcdef0123456789abcdef',
  requestId = `test-${Date.now().toString(36)}`,
  body?: unknown,
  audience?: string,
): Record<string, string> {
  const sent =
    body === undefined || typeof body === 'string' || Buffer.isBuffer(body) ? body : JSON.stringify(body)
  return assertionHeaders({ auth: principal, requestId }, { method, path: url, body: sent, audience }, secret)
}

/** The part of a Fastify app a test calls. */
interface Injectable {
  inject(o: InjectOptions): Promise<LightMyRequestResponse>
}

/** `app.inject` as the gateway would call the service on behalf of `principal`. */
export function injectAs(app: Injectable, principal: Principal) {
  return (
    method: 'GET' | 'POST' | 'PATCH',
    url: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ) =>
    app.inject({
      method,
      url,
      headers: { ...gatewayHeaders(principal, method, url, undefined, undefined, body), ...headers },
      ...(body === undefined ? {} : { payload: body as Record<string, unknown> }),
    })
}
