import { generateKeyPairSync, sign } from 'node:crypto'
import {
  ASSERTION_HEADER,
  ASSERTION_SKEW_SECONDS,
  ASSERTION_TTL_SECONDS,
  assertionHeaders,
  audienceOf,
  signAssertion,
  verifyAssertion,
  type AssertionClaims,
} from '@clinic/platform'
import { testPrincipal } from '@clinic/platform/testing'

const pair = generateKeyPairSync('ed25519')
/** The gateway's private key signs; services hold only the public half. */
const signer = { issuer: 'gateway', key: pair.privateKey }
const keys = new Map([['gateway', pair.publicKey]])
const claims: AssertionClaims = {
  ...testPrincipal({ companyId: 7, allowedCenters: ['ALM1'] }),
  aud: 'patients',
  requestId: 'req-1',
  method: 'POST',
  path: '/patients',
  query: '',
  bodyHash: '',
}
const expect0 = { method: 'POST', path: '/patients', audience: 'patients' }
const now = Date.UTC(2026, 10, 22, 9, 30)

const b64 = (s: string) => Buffer.from(s).toString('base64url')
const fromB64 = (s: string) =>
  JSON.parse(Buffer.from(s, 'base64url').toString('utf8')) as Record<string, unknown>
const resign = (payload: string, key = pair.privateKey) =>
  `v2.${payload}.${sign(null, Buffer.from(`v2.${payload}`), key).toString('base64url')}`

describe('gateway assertion', () => {
  it('round-trips the claims it signed', () => {
    const token = signAssertion(claims, signer, now)
    const r = verifyAssertion(token, keys, expect0, now + 1000)
    expect(r.ok).toBe(true)
    if (!r.ok) return
    expect(r.claims).toMatchObject(claims)
  })

  it('is valid for the TTL and expired after it', () => {
    const token = signAssertion(claims, signer, now)
    expect(verifyAssertion(token, keys, expect0, now + ASSERTION_TTL_SECONDS * 1000).ok).toBe(true)
    expect(verifyAssertion(token, keys, expect0, now + (ASSERTION_TTL_SECONDS + 1) * 1000)).toEqual({
      ok: false,
      reason: 'expired',
    })
  })

  it('refuses another key, and an issuer it has no key of', () => {
    const other = generateKeyPairSync('ed25519').privateKey
    expect(
      verifyAssertion(signAssertion(claims, { issuer: 'comms', key: other }, now), keys, expect0, now),
    ).toEqual({ ok: false, reason: 'issuer' })
    const token = signAssertion(claims, { issuer: 'gateway', key: other }, now)
    expect(verifyAssertion(token, keys, expect0, now)).toEqual({ ok: false, reason: 'signature' })
  })

  it('refuses a tampered payload (other company) under the original signature', () => {
    const token = signAssertion(claims, signer, now)
    const [v, payload, sig] = token.split('.') as [string, string, string]
    const forged = b64(JSON.stringify({ ...fromB64(payload), companyId: 8 }))
    expect(verifyAssertion(`${v}.${forged}.${sig}`, keys, expect0, now)).toEqual({
      ok: false,
      reason: 'signature',
    })
    // A truncated or stretched signature is refused, not compared partially.
    expect(verifyAssertion(`${v}.${payload}.${sig.slice(0, -2)}`, keys, expect0, now).ok).toBe(false)
    expect(verifyAssertion(`${v}.${payload}.${sig}AA`, keys, expect0, now).ok).toBe(false)
  })

  it('is bound to one method and path', () => {
    const token = signAssertion(claims, signer, now)
    expect(verifyAssertion(token, keys, { method: 'GET', path: '/patients' }, now)).toEqual({
      ok: false,
      reason: 'scope',
    })
    expect(verifyAssertion(token, keys, { method: 'POST', path: '/appointments' }, now)).toEqual({
      ok: false,
      reason: 'scope',
    })
    expect(verifyAssertion(token, keys, { method: 'POST', path: '/patients/' }, now).ok).toBe(false)
  })

  it.each([
    ['missing', undefined, 'missing'],
    ['empty', '', 'missing'],
    ['one part', 'garbage', 'malformed'],
    ['other version', signAssertion(claims, signer, now).replace(/^v2\./, 'v1.'), 'malformed'],
    ['no signature', `v2.${b64('{"iss":"gateway"}')}.`, 'malformed'],
    ['bad signature encoding', `v2.${b64('{"iss":"gateway"}')}.%%%`, 'signature'],
    ['four parts', `${signAssertion(claims, signer, now)}.x`, 'malformed'],
  ])('refuses a %s token', (_what, token, reason) => {
    expect(verifyAssertion(token, keys, expect0, now)).toEqual({ ok: false, reason })
  })

  it('refuses a correctly signed payload that is not JSON or has no expiry', () => {
    expect(verifyAssertion(resign(b64('not json')), keys, expect0, now)).toEqual({
      ok: false,
      reason: 'malformed',
    })
    const noExp = b64(JSON.stringify({ ...claims, iss: 'gateway' }))
    expect(verifyAssertion(resign(noExp), keys, expect0, now)).toEqual({ ok: false, reason: 'expired' })
  })

  it('refuses an assertion issued in the future beyond the clock skew', () => {
    const ahead = (s: number) => signAssertion(claims, signer, now + s * 1000)
    expect(verifyAssertion(ahead(ASSERTION_SKEW_SECONDS), keys, expect0, now).ok).toBe(true)
    expect(verifyAssertion(ahead(ASSERTION_SKEW_SECONDS + 2), keys, expect0, now)).toEqual({
      ok: false,
      reason: 'issued in the future',
    })
  })

  it('is bound to the raw query string: another query is refused', () => {
    const token = signAssertion({ ...claims, method: 'GET', query: 'codalmacen=ALM1' }, signer, now)
    const get = { method: 'GET', path: '/patients' }
    expect(verifyAssertion(token, keys, { ...get, query: 'codalmacen=ALM1' }, now).ok).toBe(true)
    for (const query of ['', 'codalmacen=ALM2', 'codalmacen=ALM1&q=x'])
      expect(verifyAssertion(token, keys, { ...get, query }, now)).toEqual({ ok: false, reason: 'query' })
  })

  it('carries a fresh single-use id each time it is signed, and lives seconds', () => {
    const a = verifyAssertion(signAssertion(claims, signer, now), keys, expect0, now)
    const b = verifyAssertion(signAssertion(claims, signer, now), keys, expect0, now)
    expect(a.ok && b.ok && a.claims.jti !== b.claims.jti).toBe(true)
    expect(ASSERTION_TTL_SECONDS).toBeLessThanOrEqual(10)
  })

  it('names the one service it is for: another service refuses it', () => {
    const token = signAssertion(claims, signer, now)
    expect(verifyAssertion(token, keys, { ...expect0, audience: 'appointments' }, now)).toEqual({
      ok: false,
      reason: 'audience',
    })
    // Signed before audiences existed (no aud): refused by every service.
    const [, payload] = token.split('.') as [string, string]
    const { aud: _aud, ...older } = fromB64(payload)
    expect(verifyAssertion(resign(b64(JSON.stringify(older))), keys, expect0, now)).toEqual({
      ok: false,
      reason: 'audience',
    })
  })

  it('is addressed to the service owning the path family unless told otherwise', () => {
    expect(audienceOf('/patients')).toBe('patients')
    expect(audienceOf('/internal/patients/0190c5a0?x=1')).toBe('patients')
    expect(audienceOf('/appointments/1/checkin')).toBe('appointments')
    expect(audienceOf('/comms/webhooks/twilio')).toBe('comms')
    expect(audienceOf('/audit/events')).toBe('audit')
    expect(audienceOf('/internal')).toBeUndefined()
    expect(audienceOf('/nothing')).toBeUndefined()
    const who = { auth: testPrincipal(), requestId: 'req-2' }
    const claimsOf = (h: Record<string, string>) => fromB64(h[ASSERTION_HEADER]!.split('.')[1]!)
    expect(
      claimsOf(assertionHeaders(who, { method: 'GET', path: '/internal/appointments/x' }, signer)),
    ).toMatchObject({
      aud: 'appointments',
    })
    expect(
      claimsOf(assertionHeaders(who, { method: 'GET', path: '/patients', audience: 'comms' }, signer)),
    ).toMatchObject({ aud: 'comms' })
    expect(() => assertionHeaders(who, { method: 'GET', path: '/nothing' }, signer)).toThrow(/audience/)
  })
})
