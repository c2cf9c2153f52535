import { createHash } from 'node:crypto'
import { CompactSign } from 'jose'
import {
  BATCH_SEPARATOR,
  provenByBatch,
  verifiedJws,
  type AssertionBatcher,
  type Checked,
} from './assertion-batch'
import type { AssertionKeys, AssertionSigner } from './assertion-keys'
import { randomBase64url } from './ids'
import type { CompanyNames, Principal } from './principal'
import { serviceList } from './service-list'

export type { CompanyNames, Principal }

export interface AssertionClaims extends Principal {
  /** The service the assertion is for (its name in services.json); every other service refuses it. */
  aud: string
  requestId: string
  method: string
  path: string
  /** The raw query string, without `?` ('' when none). */
  query: string
  /** bodyHashOf(the exact body bytes), '' without a body. */
  bodyHash: string
}

export const ASSERTION_HEADER = 'x-clinic-assertion'
/** The JWS `typ` of one request's assertion: its payload is the claims (a JWT claims set). */
export const ASSERTION_TYPE = 'clinic-assertion+jwt'
export const ASSERTION_TTL_SECONDS = 10
/** Clocks of gateway and services may differ this much; an assertion from further ahead is refused. */
export const ASSERTION_SKEW_SECONDS = 5
/** Longer than any assertion made here (claims, a 64-leaf proof, a JWS): anything longer is not parsed. */
const MAX_TOKEN_CHARS = 8192

const b64 = (s: string | Buffer) => Buffer.from(s).toString('base64url')

/**
 * The body hash of an upload the gateway streams on unread (services.json `uploads`): no hash can
 * be known before the bytes have passed. A service accepts it only on a route that says it takes
 * streamed bodies (`streamedBody`); everywhere else it matches no body. See docs/security.md.
 */
export const STREAMED_BODY = 'streamed'

/** SHA-256 of a request body's exact bytes, base64url; '' for no body. */
export function bodyHashOf(body: string | Buffer | undefined | null): string {
  if (body === undefined || body === null || body.length === 0) return ''
  return createHash('sha256').update(body).digest('base64url')
}

/** `/patients?x=1` -> { path: '/patients', query: 'x=1' }: the query exactly as sent. */
export function splitUrl(url: string): { path: string; query: string } {
  const q = url.indexOf('?')
  return q < 0 ? { path: url, query: '' } : { path: url.slice(0, q), query: url.slice(q + 1) }
}

/**
 * A short-lived statement signed by the gateway, or by a service calling another on behalf of a
 * caller: a JWS (RFC 7515, compact serialization) made with `jose`, EdDSA over Ed25519 (RFC 8037),
 * whose protected header names the issuer (`kid`, equal to the claims' `iss`) and whose payload is
 * the claims. It is bound to one request: its method, path, raw query string and the hash of its
 * body, so a captured header cannot be replayed against another endpoint, with other parameters or
 * another body; it carries a single-use id (`jti`, refused the second time by the service) and
 * expires within seconds. It names the one service it is for (`aud`): a service refuses an
 * assertion addressed to another. Only the holder of the issuer's private key can make one;
 * services hold public keys only (assertion-keys.ts), and accept EdDSA alone (never `none`, never
 * an HMAC keyed with a public key). The gateway signs its requests in batches (assertion-batch.ts).
 */
export function signAssertion(
  claims: AssertionClaims,
  signer: AssertionSigner,
  now = Date.now(),
): Promise<string> {
  return new CompactSign(Buffer.from(claimsJson(claims, signer, now)))
    .setProtectedHeader({ alg: 'EdDSA', typ: ASSERTION_TYPE, kid: signer.issuer })
    .sign(signer.key)
}

/** The same assertion signed in a batch (assertion-batch.ts): `<batch JWS>~<claims>~<proof>`. */
export const signAssertionInBatch = (
  claims: AssertionClaims,
  signer: AssertionSigner,
  batcher: AssertionBatcher,
  now = Date.now(),
): Promise<string> => batcher.sign(b64(claimsJson(claims, signer, now)))

/** The claims as they travel: JSON, with issuer, times and a single-use id. */
function claimsJson(claims: AssertionClaims, signer: AssertionSigner, now: number): string {
  const iat = Math.floor(now / 1000)
  const jti = randomBase64url(12)
  // The claims' own JSON with these four appended: one serialisation, and no copy of the claims.
  const own = JSON.stringify(claims)
  return `${own.slice(0, -1)}${own.length > 2 ? ',' : ''}"iss":${JSON.stringify(signer.issuer)},"iat":${iat},"exp":${iat + ASSERTION_TTL_SECONDS},"jti":"${jti}"}`
}

export type VerifiedClaims = AssertionClaims & { iss: string; jti: string; exp: number }
export type VerifyResult = { ok: true; claims: VerifiedClaims } | { ok: false; reason: string }

/** The claims of a well-formed assertion, before its signature is checked; null when malformed. */
function readClaims(json: string): (VerifiedClaims & { iat: number }) | null {
  try {
    const claims = JSON.parse(json) as unknown
    return claims && typeof claims === 'object' && !Array.isArray(claims)
      ? (claims as VerifiedClaims & { iat: number })
      : null
  } catch {
    return null
  }
}

/**
 * The claims of an assertion for this request, or why it is refused. A promise only when a
 * signature has to be checked (jose checks asynchronously): an assertion of a batch whose JWS was
 * already checked is answered at once.
 */
export function verifyAssertion(
  token: string | undefined,
  keys: AssertionKeys,
  /** `audience`: the verifying service's own name (the platform http plugin always passes it). */
  expect: { method: string; path: string; query?: string; audience?: string },
  now = Date.now(),
): VerifyResult | Promise<VerifyResult> {
  if (!token) return { ok: false, reason: 'missing' }
  if (token.length > MAX_TOKEN_CHARS) return { ok: false, reason: 'malformed' }
  // A batch's assertion carries its claims and proof beside the batch's JWS; one alone is a JWS.
  const checked = token.includes(BATCH_SEPARATOR)
    ? provenByBatch(token, keys, now)
    : verifiedJws(token, ASSERTION_TYPE, keys)
  return checked instanceof Promise
    ? checked.then((c) => judged(c, expect, now))
    : judged(checked, expect, now)
}

/** The claims of a checked assertion held against the request and the clock. */
function judged(
  checked: Checked,
  expect: { method: string; path: string; query?: string; audience?: string },
  now: number,
): VerifyResult {
  if ('reason' in checked) return { ok: false, reason: checked.reason }
  const claims = readClaims(checked.json)
  if (!claims) return { ok: false, reason: 'malformed' }
  // The key that signed is the issuer's: claims naming another issuer are refused.
  if (claims.iss !== checked.issuer) return { ok: false, reason: 'issuer' }
  if (typeof claims.exp !== 'number' || claims.exp * 1000 < now) return { ok: false, reason: 'expired' }
  if (typeof claims.iat !== 'number' || claims.iat * 1000 > now + ASSERTION_SKEW_SECONDS * 1000)
    return { ok: false, reason: 'issued in the future' }
  if (expect.audience !== undefined && claims.aud !== expect.audience)
    return { ok: false, reason: 'audience' }
  if (claims.method !== expect.method || claims.path !== expect.path) return { ok: false, reason: 'scope' }
  if ((claims.query ?? '') !== (expect.query ?? '')) return { ok: false, reason: 'query' }
  if (typeof claims.jti !== 'string' || !claims.jti) return { ok: false, reason: 'malformed' }
  return { ok: true, claims }
}

let owners: { families: Map<string, string>; fhirTypes: Map<string, string> } | undefined
/** Path family -> service name, and FHIR type -> service name, from services.json (the one list). */
function ownerTables() {
  owners ??= {
    families: new Map(
      serviceList().services.flatMap((s) =>
        Object.keys(s.families).map((f): [string, string] => [f, s.name]),
      ),
    ),
    fhirTypes: new Map(
      serviceList().services.flatMap((s) =>
        Object.keys(s.fhir ?? {}).map((t): [string, string] => [t, s.name]),
      ),
    ),
  }
  return owners
}

/**
 * The service that answers a service path (`/patients/...`, `/internal/patients/...` -> patients):
 * each path family belongs to one service, and so does each FHIR type (`/fhir/R4/<Type>/...`,
 * services.json `fhir`). Undefined for a path no service owns.
 */
export function audienceOf(servicePath: string): string | undefined {
  const parts = splitUrl(servicePath).path.split('/')
  if (parts[1] === 'fhir' && parts[2] === 'R4')
    return parts[3] ? ownerTables().fhirTypes.get(parts[3]) : undefined
  const family = parts[1] === 'internal' ? parts[2] : parts[1]
  return family ? ownerTables().families.get(family) : undefined
}

/**
 * The headers that carry a caller's identity to another service for one request: the gateway
 * sends them on every proxied request, a service when it calls another on behalf of its caller
 * (signed with its own key: the callee takes it only on the internal routes that name that caller).
 * `path` may carry the query string; `body` is the exact body that will be sent. `audience` is the
 * called service's name; when left out, the service owning the path's family (audienceOf).
 */
export async function assertionHeaders(
  who: { auth: Principal; requestId: string },
  request: { method: string; path: string; body?: string | Buffer; audience?: string; streamed?: boolean },
  signer: AssertionSigner,
  now = Date.now(),
): Promise<Record<string, string>> {
  return {
    [ASSERTION_HEADER]: await signAssertion(requestClaims(who, request), signer, now),
    'x-request-id': who.requestId,
  }
}

/** The claims of an assertion for one request (see assertionHeaders). */
export function requestClaims(
  who: { auth: Principal; requestId: string },
  request: { method: string; path: string; body?: string | Buffer; audience?: string; streamed?: boolean },
): AssertionClaims {
  const { path, query } = splitUrl(request.path)
  const aud = request.audience ?? audienceOf(path)
  if (!aud) throw new Error(`no service owns ${path}: name the audience of the assertion`)
  return {
    ...who.auth,
    aud,
    requestId: who.requestId,
    method: request.method,
    path,
    query,
    bodyHash: request.streamed ? STREAMED_BODY : bodyHashOf(request.body),
  }
}
