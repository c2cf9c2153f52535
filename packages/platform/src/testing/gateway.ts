import type { InjectOptions, LightMyRequestResponse } from 'fastify'
import { assertionHeaders, type Principal } from '../assertion'
import {
  GATEWAY_ISSUER,
  parsePrivateKey,
  parsePublicKey,
  type AssertionKeys,
  type AssertionSigner,
} from '../assertion-keys'
import type { ServicesOf } from '../internal-api/services'
import { internalClients } from '../internal-client'

const envKey = (name: string) => {
  const text = process.env[name]
  if (!text) throw new Error(`${name} is not set: the test run's global setup makes the keys`)
  return text
}
const prefixOf = (service: string) => service.toUpperCase().replace(/-/g, '_')

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
 * The gateway's signing key of the run (GATEWAY_SIGNING_KEY, set by the global setup), or, with
 * `issuer`, the key that service signs its calls with (`<ISSUER>_SERVICE_SIGNING_KEY` of the run).
 */
export function testSigner(issuer = GATEWAY_ISSUER): AssertionSigner {
  const name = issuer === GATEWAY_ISSUER ? 'GATEWAY_SIGNING_KEY' : `${prefixOf(issuer)}_SERVICE_SIGNING_KEY`
  return { issuer, key: parsePrivateKey(envKey(name), name) }
}

/** What a service of the run verifies with: the gateway's public key and its `callers`' keys. */
export function testAssertionKeys(callers: readonly string[] = []): AssertionKeys {
  const keys = new Map([[GATEWAY_ISSUER, parsePublicKey(envKey('GATEWAY_VERIFY_KEY'))]])
  for (const c of callers) keys.set(c, parsePublicKey(envKey(`${prefixOf(c)}_SERVICE_VERIFY_KEY`)))
  return keys
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
  signer: AssertionSigner = testSigner(),
  requestId = `test-${Date.now().toString(36)}`,
  body?: unknown,
  audience?: string,
): Promise<Record<string, string>> {
  const sent =
    body === undefined || typeof body === 'string' || Buffer.isBuffer(body) ? body : JSON.stringify(body)
  return assertionHeaders({ auth: principal, requestId }, { method, path: url, body: sent, audience }, signer)
}

/** The part of a Fastify app a test calls. */
interface Injectable {
  inject(o: InjectOptions): Promise<LightMyRequestResponse>
}

/**
 * `app.inject` as the gateway would call the service on behalf of `principal`; with `signer`, as
 * that service would (testSigner('comms')) on an internal route.
 */
export function injectAs(app: Injectable, principal: Principal, signer: AssertionSigner = testSigner()) {
  return (
    method: 'GET' | 'POST' | 'PATCH' | 'DELETE',
    url: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ) =>
    gatewayHeaders(principal, method, url, signer, undefined, body).then((asserted) =>
      app.inject({
        method,
        url,
        headers: { ...asserted, ...headers },
        ...(body === undefined ? {} : { payload: body as Record<string, unknown> }),
      }),
    )
}

/**
 * A caller's typed clients (`deps.services`) as in a run: signed with the caller's key of the run,
 * every service it calls answering at `baseUrl` (a test's stand-in, e.g. a local HTTP server).
 */
export const testServices = <C extends string>(caller: C, baseUrl: string, timeoutMs = 2000): ServicesOf<C> =>
  internalClients(caller, { signer: testSigner(caller), timeoutMs, baseUrl: () => baseUrl })
