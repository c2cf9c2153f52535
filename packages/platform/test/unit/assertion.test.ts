import { createHmac } from 'node:crypto'
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

const secret = 'unit-secret-0123456789abcdef0123456789'
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
const resign = (payload: string, key = secret) =>
  `v1.${payload}.${createHmac('sha256', key).update(`v1.${payload}`).digest('base64url')}`

describe('gateway assertion', () => {
  it('round-trips the claims it signed', () => {
    const token = signAssertion(claims, secret, now)
    const r = verifyAssertion(token, secret, expect0, now + 1000)
    expect(r.ok).toBe(true)
    if (!r.ok) return
    expect(r.claims).toMatchObject(claims)
  })

  it('is valid for the TTL and expired after it', () => {
    const token = signAssertion(claims, secret, now)
    expect(verifyAssertion(token, secret, expect0, now + ASSERTION_TTL_SECONDS * 1000).ok).toBe(true)
    expect(verifyAssertion(token, secret, expect0, now + (ASSERTION_TTL_SECONDS + 1) * 1000)).toEqual({
      ok: false,
      reason: 'expired',
    })
  })

  it('refuses another secret', () => {
    const token = signAssertion(claims, 'another-secret-0123456789abcdef0123', now)
    expect(verifyAssertion(token, secret, expect0, now)).toEqual({ ok: false, reason: 'signature' })
  })

  it('refuses a tampered payload (other company) under the original signature', () => {
    const token = signAssertion(claims, secret, now)
    const [v, payload, sig] = token.split('.') as [string, string, string]
    const forged = b64(JSON.stringify({ ...fromB64(payload), companyId: 8 }))
    expect(verifyAssertion(`${v}.${forged}.${sig}`, secret, expect0, now)).toEqual({
      ok: false,
      reason: 'signature',
    })
    // A truncated or stretched signature is refused, not compared partially.
    expect(verifyAssertion(`${v}.${payload}.${sig.slice(0, -2)}`, secret, expect0, now).ok).toBe(false)
    expect(verifyAssertion(`${v}.${payload}.${sig}AA`, secret, expect0, now).ok).toBe(false)
  })

  it('is bound to one method and path', () => {
    const token = signAssertion(claims, secret, now)
    expect(verifyAssertion(token, secret, { method: 'GET', path: '/patients' }, now)).toEqual({
      ok: false,
      reason: 'scope',
    })
    expect(verifyAssertion(token, secret, { method: 'POST', path: '/appointments' }, now)).toEqual({
      ok: false,
      reason: 'scope',
    })
    expect(verifyAssertion(token, secret, { method: 'POST', path: '/patients/' }, now).ok).toBe(false)
  })

  it.each([
    ['missing', undefined, 'missing'],
    ['empty', '', 'missing'],
    ['one part', 'garbage', 'malformed'],
    ['other version', signAssertion(claims, secret, now).replace(/^v1\./, 'v2.'), 'malformed'],
    ['no signature', `v1.${b64('{}')}.`, 'malformed'],
    ['bad signature encoding', `v1.${b64('{}')}.%%%`, 'signature'],
  ])('refuses a %s token', (_what, token, reason) => {
    expect(verifyAssertion(token, secret, expect0, now)).toEqual({ ok: false, reason })
  })

  it('refuses a correctly signed payload that is not JSON or has no expiry', () => {
    expect(verifyAssertion(resign(b64('not json')), secret, expect0, now)).toEqual({
      ok: false,
      reason: 'malformed',
    })
    const noExp = b64(JSON.stringify({ ...claims }))
    expect(verifyAssertion(resign(noExp), secret, expect0, now)).toEqual({ ok: false, reason: 'expired' })
  })

  it('refuses an assertion issued in the future beyond the clock skew', () => {
    const ahead = (s: number) => signAssertion(claims, secret, now + s * 1000)
    expect(verifyAssertion(ahead(ASSERTION_SKEW_SECONDS), secret, expect0, now).ok).toBe(true)
    expect(verifyAssertion(ahead(ASSERTION_SKEW_SECONDS + 2), secret, expect0, now)).toEqual({
      ok: false,
      reason: 'issued in the future',
    })
  })

  it('is bound to the raw query string: another query is refused', () => {
    const token = signAssertion({ ...claims, method: 'GET', query: 'codalmacen=ALM1' }, secret, now)
    const get = { method: 'GET', path: '/patients' }
    expect(verifyAssertion(token, secret, { ...get, query: 'codalmacen=ALM1' }, now).ok).toBe(true)
    for (const query of ['', 'codalmacen=ALM2', 'codalmacen=ALM1&q=x'])
      expect(verifyAssertion(token, secret, { ...get, query }, now)).toEqual({ ok: false, reason: 'query' })
  })

  it('carries a fresh single-use id each time it is signed, and lives seconds', () => {
    const a = verifyAssertion(signAssertion(claims, secret, now), secret, expect0, now)
    const b = verifyAssertion(signAssertion(claims, secret, now), secret, expect0, now)
    expect(a.ok && b.ok && a.claims.jti !== b.claims.jti).toBe(true)
    expect(ASSERTION_TTL_SECONDS).toBeLessThanOrEqual(10)
  })

  it('names the one service it is for: another service refuses it', () => {
    const token = signAssertion(claims, secret, now)
    expect(verifyAssertion(token, secret, { ...expect0, audience: 'appointments' }, now)).toEqual({
      ok: false,
      reason: 'audience',
    })
    // Signed before audiences existed (no aud): refused by every service.
    const [, payload] = token.split('.') as [string, string]
    const { aud: _aud, ...older } = fromB64(payload)
    expect(verifyAssertion(resign(b64(JSON.stringify(older))), secret, expect0, now)).toEqual({
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
      claimsOf(assertionHeaders(who, { method: 'GET', path: '/internal/appointments/x' }, secret)),
    ).toMatchObject({
      aud: 'appointments',
    })
    expect(
      claimsOf(assertionHeaders(who, { method: 'GET', path: '/patients', audience: 'comms' }, secret)),
    ).toMatchObject({ aud: 'comms' })
    expect(() => assertionHeaders(who, { method: 'GET', path: '/nothing' }, secret)).toThrow(/audience/)
  })
})
