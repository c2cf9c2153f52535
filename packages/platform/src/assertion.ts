import { createHash, randomBytes, sign, verify, type KeyObject } from 'node:crypto'
import { BATCH_VERSION, provenByBatch, type AssertionBatcher } from './assertion-batch'
import type { AssertionKeys, AssertionSigner } from './assertion-keys'
import { serviceList } from './service-list'

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
const VERSION = 'v2'
export const ASSERTION_TTL_SECONDS = 10
/** Clocks of gateway and services may differ this much; an assertion from further ahead is refused. */
export const ASSERTION_SKEW_SECONDS = 5

const b64 = (s: string | Buffer) => Buffer.from(s).toString('base64url')

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
 * A short-lived statement signed (Ed25519) by the gateway, or by a service calling another on
 * behalf of a caller, naming its issuer (`iss`). It is bound to one request: its method, path, raw
 * query string and the hash of its body, so a captured header cannot be replayed against another
 * endpoint, with other parameters or another body; it carries a single-use id (`jti`, refused the
 * second time by the service) and expires within seconds. It names the one service it is for
 * (`aud`): a service refuses an assertion addressed to another, so one captured on its way to
 * patients is worth nothing at appointments. Only the holder of the issuer's private key can make
 * one; services hold public keys only (assertion-keys.ts).
 */
export function signAssertion(claims: AssertionClaims, signer: AssertionSigner, now = Date.now()): string {
  const data = `${VERSION}.${claimsPayload(claims, signer, now)}`
  return `${data}.${b64(sign(null, Buffer.from(data), signer.key))}`
}

/** The same assertion signed in a batch (assertion-batch.ts): `v3.<claims>.<proof>.<signature>`. */
export const signAssertionInBatch = (
  claims: AssertionClaims,
  signer: AssertionSigner,
  batcher: AssertionBatcher,
  now = Date.now(),
): Promise<string> => batcher.sign(claimsPayload(claims, signer, now))

/** The claims as they travel: base64url JSON, with issuer, times and a single-use id. */
function claimsPayload(claims: AssertionClaims, signer: AssertionSigner, now: number): string {
  const iat = Math.floor(now / 1000)
  const jti = randomBytes(12).toString('base64url')
  return b64(JSON.stringify({ ...claims, iss: signer.issuer, iat, exp: iat + ASSERTION_TTL_SECONDS, jti }))
}

export type VerifiedClaims = AssertionClaims & { iss: string; jti: string; exp: number }
export type VerifyResult = { ok: true; claims: VerifiedClaims } | { ok: false; reason: string }

const ED25519_SIGNATURE_BYTES = 64

/** A v2 assertion's own signature over `data`. */
function signedAlone(data: string, signature: string, key: KeyObject): boolean {
  const given = Buffer.from(signature, 'base64url')
  return (
    given.length === ED25519_SIGNATURE_BYTES &&
    given.toString('base64url') === signature &&
    verify(null, Buffer.from(data), key, given)
  )
}

/** The claims of a well-formed assertion, before its signature is checked; null when malformed. */
function readClaims(payload: string): (VerifiedClaims & { iat: number }) | null {
  try {
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as unknown
    return claims && typeof claims === 'object' ? (claims as VerifiedClaims & { iat: number }) : null
  } catch {
    return null
  }
}

export function verifyAssertion(
  token: string | undefined,
  keys: AssertionKeys,
  /** `audience`: the verifying service's own name (the platform http plugin always passes it). */
  expect: { method: string; path: string; query?: string; audience?: string },
  now = Date.now(),
): VerifyResult {
  if (!token) return { ok: false, reason: 'missing' }
  const [version, payload, third, fourth, extra] = token.split('.')
  // v2: claims and their own signature; v3: claims, an inclusion proof and its batch's signature.
  const batched = version === BATCH_VERSION
  if ((version !== VERSION && !batched) || !payload || !third || extra !== undefined || batched !== !!fourth)
    return { ok: false, reason: 'malformed' }
  const claims = readClaims(payload)
  if (!claims || typeof claims.iss !== 'string') return { ok: false, reason: 'malformed' }
  const key = keys.get(claims.iss)
  if (!key) return { ok: false, reason: 'issuer' }
  const until = Number(claims.exp) * 1000 // how long a checked batch root is worth remembering
  if (
    batched
      ? !provenByBatch(payload, third, fourth!, { keys, issuer: claims.iss, key, until }, now)
      : !signedAlone(`${version}.${payload}`, third, key)
  )
    return { ok: false, reason: 'signature' }
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

let families: Map<string, string> | undefined
/** Path family -> service name, from services.json (the one list of services). */
function familyTable(): Map<string, string> {
  families ??= new Map(
    serviceList().services.flatMap((s) => Object.keys(s.families).map((f): [string, string] => [f, s.name])),
  )
  return families
}

/**
 * The service that answers a service path (`/patients/...`, `/internal/patients/...` -> patients):
 * each path family belongs to one service. Undefined for a path no service owns.
 */
export function audienceOf(servicePath: string): string | undefined {
  const parts = splitUrl(servicePath).path.split('/')
  const family = parts[1] === 'internal' ? parts[2] : parts[1]
  return family ? familyTable().get(family) : undefined
}

/**
 * The headers that carry a caller's identity to another service for one request: the gateway
 * sends them on every proxied request, a service when it calls another on behalf of its caller
 * (signed with its own key: the callee takes it only on the internal routes that name that caller).
 * `path` may carry the query string; `body` is the exact body that will be sent. `audience` is the
 * called service's name; when left out, the service owning the path's family (audienceOf).
 */
export function assertionHeaders(
  who: { auth: Principal; requestId: string },
  request: { method: string; path: string; body?: string | Buffer; audience?: string },
  signer: AssertionSigner,
  now = Date.now(),
): Record<string, string> {
  return {
    [ASSERTION_HEADER]: signAssertion(requestClaims(who, request), signer, now),
    'x-request-id': who.requestId,
  }
}

/** The claims of an assertion for one request (see assertionHeaders). */
export function requestClaims(
  who: { auth: Principal; requestId: string },
  request: { method: string; path: string; body?: string | Buffer; audience?: string },
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
    bodyHash: bodyHashOf(request.body),
  }
}
