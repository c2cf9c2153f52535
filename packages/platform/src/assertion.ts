import { createHmac, timingSafeEqual } from 'node:crypto'

/** Who is calling, as the gateway established it from the token. */
export interface Principal {
  companyId: number
  userId: string
  username: string
  tokenId: string
  /** Every center code of the company (to check a codalmacen sent in a body). */
  companyCenters: string[]
  /** The centers the token is limited to, or null when it may use them all. */
  allowedCenters: string[] | null
}

export interface AssertionClaims extends Principal {
  requestId: string
  method: string
  path: string
}

export const ASSERTION_HEADER = 'x-clinic-assertion'
const VERSION = 'v1'
export const ASSERTION_TTL_SECONDS = 60

const b64 = (s: string | Buffer) => Buffer.from(s).toString('base64url')
const mac = (secret: string, data: string) => createHmac('sha256', secret).update(data).digest()

/**
 * A short-lived HMAC-signed statement from the gateway (or a service calling another service on
 * behalf of a caller). It is bound to the method and path of one request, so a captured header
 * cannot be replayed against another endpoint, and expires within a minute.
 */
export function signAssertion(claims: AssertionClaims, secret: string, now = Date.now()): string {
  const iat = Math.floor(now / 1000)
  const payload = b64(JSON.stringify({ ...claims, iat, exp: iat + ASSERTION_TTL_SECONDS }))
  return `${VERSION}.${payload}.${b64(mac(secret, `${VERSION}.${payload}`))}`
}

export type VerifyResult = { ok: true; claims: AssertionClaims } | { ok: false; reason: string }

export function verifyAssertion(
  token: string | undefined,
  secret: string,
  expect: { method: string; path: string },
  now = Date.now(),
): VerifyResult {
  if (!token) return { ok: false, reason: 'missing' }
  const [version, payload, signature] = token.split('.')
  if (version !== VERSION || !payload || !signature) return { ok: false, reason: 'malformed' }
  const given = Buffer.from(signature, 'base64url')
  const wanted = mac(secret, `${version}.${payload}`)
  if (given.length !== wanted.length || !timingSafeEqual(given, wanted))
    return { ok: false, reason: 'signature' }
  let claims: AssertionClaims & { exp: number }
  try {
    claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'))
  } catch {
    return { ok: false, reason: 'malformed' }
  }
  if (typeof claims.exp !== 'number' || claims.exp * 1000 < now) return { ok: false, reason: 'expired' }
  if (claims.method !== expect.method || claims.path !== expect.path) return { ok: false, reason: 'scope' }
  return { ok: true, claims }
}
