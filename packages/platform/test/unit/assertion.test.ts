import { generateKeyPairSync } from 'node:crypto'
import { CompactSign } from 'jose'
import {
  ASSERTION_HEADER,
  ASSERTION_SKEW_SECONDS,
  ASSERTION_TTL_SECONDS,
  ASSERTION_TYPE,
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

const b64 = (s: string | Buffer) => Buffer.from(s).toString('base64url')
const fromB64 = (s: string) =>
  JSON.parse(Buffer.from(s, 'base64url').toString('utf8')) as Record<string, unknown>
/** Any payload as a JWS of the gateway's (its key by default): what a holder of that key could sign. */
const resign = (payload: string, key = pair.privateKey, header: Record<string, unknown> = {}) =>
  new CompactSign(Buffer.from(payload))
    .setProtectedHeader({ alg: 'EdDSA', typ: ASSERTION_TYPE, kid: 'gateway', ...header })
    .sign(key)
const check = (token: string | undefined, at = now, expected = expect0) =>
  verifyAssertion(token, keys, expected, at)

describe('gateway assertion', () => {
  it('is a JWS (EdDSA) whose header names its issuer and whose payload is the claims', async () => {
    const token = await signAssertion(claims, signer, now)
    const [header, payload, signature, extra] = token.split('.')
    expect(extra).toBeUndefined()
    expect(fromB64(header!)).toEqual({ alg: 'EdDSA', typ: ASSERTION_TYPE, kid: 'gateway' })
    expect(fromB64(payload!)).toMatchObject({ ...claims, iss: 'gateway' })
    expect(Buffer.from(signature!, 'base64url')).toHaveLength(64)
    const r = await check(token, now + 1000)
    expect(r.ok).toBe(true)
    if (!r.ok) return
    expect(r.claims).toMatchObject(claims)
  })

  it('is valid for the TTL and expired after it', async () => {
    const token = await signAssertion(claims, signer, now)
    expect((await check(token, now + ASSERTION_TTL_SECONDS * 1000)).ok).toBe(true)
    expect(await check(token, now + (ASSERTION_TTL_SECONDS + 1) * 1000)).toEqual({
      ok: false,
      reason: 'expired',
    })
  })

  it('refuses another key, and an issuer it has no key of', async () => {
    const other = generateKeyPairSync('ed25519').privateKey
    expect(await check(await signAssertion(claims, { issuer: 'comms', key: other }, now))).toEqual({
      ok: false,
      reason: 'issuer',
    })
    const token = await signAssertion(claims, { issuer: 'gateway', key: other }, now)
    expect(await check(token)).toEqual({ ok: false, reason: 'signature' })
  })

  it('refuses claims naming another issuer than the key that signed them', async () => {
    const comms = generateKeyPairSync('ed25519')
    const both = new Map([...keys, ['comms', comms.publicKey]])
    // Signed by comms (kid comms) but claiming to be the gateway's.
    const payload = JSON.stringify({
      ...claims,
      iss: 'gateway',
      iat: now / 1000,
      exp: now / 1000 + 5,
      jti: 'j',
    })
    const token = await resign(payload, comms.privateKey, { kid: 'comms' })
    expect(await verifyAssertion(token, both, expect0, now)).toEqual({ ok: false, reason: 'issuer' })
  })

  it('refuses `alg: none` and an HS256 token keyed with the public key', async () => {
    const token = await signAssertion(claims, signer, now)
    const [, payload] = token.split('.') as [string, string]
    const none = `${b64(JSON.stringify({ alg: 'none', typ: ASSERTION_TYPE, kid: 'gateway' }))}.${payload}.`
    expect(await check(none)).toEqual({ ok: false, reason: 'algorithm' })
    // The confusion attack: the public key (known to every service) used as an HMAC secret.
    const publicDer = pair.publicKey.export({ format: 'der', type: 'spki' })
    for (const secret of [publicDer, Buffer.from(publicDer.toString('base64'))]) {
      const hs = await new CompactSign(Buffer.from(payload, 'base64url'))
        .setProtectedHeader({ alg: 'HS256', typ: ASSERTION_TYPE, kid: 'gateway' })
        .sign(secret)
      expect(await check(hs)).toEqual({ ok: false, reason: 'algorithm' })
    }
  })

  it('refuses a tampered payload (other company) under the original signature', async () => {
    const token = await signAssertion(claims, signer, now)
    const [header, payload, sig] = token.split('.') as [string, string, string]
    const forged = b64(JSON.stringify({ ...fromB64(payload), companyId: 8 }))
    expect(await check(`${header}.${forged}.${sig}`)).toEqual({ ok: false, reason: 'signature' })
    // A truncated or stretched signature is refused, not compared partially.
    expect((await check(`${header}.${payload}.${sig.slice(0, -2)}`)).ok).toBe(false)
    expect((await check(`${header}.${payload}.${sig}AA`)).ok).toBe(false)
  })

  it('is bound to one method and path', async () => {
    const token = await signAssertion(claims, signer, now)
    expect(await check(token, now, { method: 'GET', path: '/patients' } as typeof expect0)).toEqual({
      ok: false,
      reason: 'scope',
    })
    expect(await check(token, now, { ...expect0, path: '/appointments' })).toEqual({
      ok: false,
      reason: 'scope',
    })
    expect((await check(token, now, { ...expect0, path: '/patients/' })).ok).toBe(false)
  })

  it.each([
    ['missing', undefined, 'missing'],
    ['empty', '', 'missing'],
    ['one part', 'garbage', 'malformed'],
    [
      'no signature',
      `${b64('{"alg":"EdDSA","typ":"clinic-assertion+jwt","kid":"gateway"}')}.${b64('{}')}.`,
      'signature',
    ],
    [
      'bad signature encoding',
      `${b64('{"alg":"EdDSA","typ":"clinic-assertion+jwt","kid":"gateway"}')}.${b64('{}')}.%%%`,
      'signature',
    ],
    ['header that is not JSON', `${b64('nope')}.${b64('{}')}.AAAA`, 'malformed'],
    [
      'header without a kid',
      `${b64('{"alg":"EdDSA","typ":"clinic-assertion+jwt"}')}.${b64('{}')}.AAAA`,
      'malformed',
    ],
    [
      'JWS of another type',
      `${b64('{"alg":"EdDSA","typ":"JWT","kid":"gateway"}')}.${b64('{}')}.AAAA`,
      'malformed',
    ],
    ['huge', 'a'.repeat(10_000), 'malformed'],
  ])('refuses a %s token', async (_what, token, reason) => {
    expect(await check(token)).toEqual({ ok: false, reason })
  })

  it('refuses a four-part token', async () => {
    expect(await check(`${await signAssertion(claims, signer, now)}.x`)).toEqual({
      ok: false,
      reason: 'malformed',
    })
  })

  it('refuses a correctly signed payload that is not JSON or has no expiry', async () => {
    expect(await check(await resign('not json'))).toEqual({ ok: false, reason: 'malformed' })
    const noExp = JSON.stringify({ ...claims, iss: 'gateway' })
    expect(await check(await resign(noExp))).toEqual({ ok: false, reason: 'expired' })
  })

  it('refuses an assertion issued in the future beyond the clock skew', async () => {
    const ahead = (s: number) => signAssertion(claims, signer, now + s * 1000)
    expect((await check(await ahead(ASSERTION_SKEW_SECONDS))).ok).toBe(true)
    expect(await check(await ahead(ASSERTION_SKEW_SECONDS + 2))).toEqual({
      ok: false,
      reason: 'issued in the future',
    })
  })

  it('is bound to the raw query string: another query is refused', async () => {
    const token = await signAssertion({ ...claims, method: 'GET', query: 'codalmacen=ALM1' }, signer, now)
    const get = { method: 'GET', path: '/patients', audience: 'patients' }
    expect((await check(token, now, { ...get, query: 'codalmacen=ALM1' } as typeof expect0)).ok).toBe(true)
    for (const query of ['', 'codalmacen=ALM2', 'codalmacen=ALM1&q=x'])
      expect(await check(token, now, { ...get, query } as typeof expect0)).toEqual({
        ok: false,
        reason: 'query',
      })
  })

  it('carries a fresh single-use id each time it is signed, and lives seconds', async () => {
    const a = await check(await signAssertion(claims, signer, now))
    const b = await check(await signAssertion(claims, signer, now))
    expect(a.ok && b.ok && a.claims.jti !== b.claims.jti).toBe(true)
    expect(ASSERTION_TTL_SECONDS).toBeLessThanOrEqual(10)
  })

  it('names the one service it is for: another service refuses it', async () => {
    const token = await signAssertion(claims, signer, now)
    expect(await check(token, now, { ...expect0, audience: 'appointments' })).toEqual({
      ok: false,
      reason: 'audience',
    })
    // Without an audience: refused by every service.
    const [, payload] = token.split('.') as [string, string]
    const { aud: _aud, ...older } = fromB64(payload)
    expect(await check(await resign(JSON.stringify(older)))).toEqual({ ok: false, reason: 'audience' })
  })

  it('is addressed to the service owning a FHIR type (services.json fhir) for its paths', () => {
    const list = jest.requireActual<typeof import('../../src/service-list')>('../../src/service-list')
    const [first, ...rest] = list.serviceList().services
    jest.isolateModules(() => {
      jest.doMock('../../src/service-list', () => ({
        ...list,
        serviceList: () => ({
          ...list.serviceList(),
          services: [{ ...first!, fhir: { UnitTestFlag: 'any' } }, ...rest],
        }),
      }))
      const { audienceOf: of } =
        jest.requireActual<typeof import('../../src/assertion')>('../../src/assertion')
      expect(of('/fhir/R4/UnitTestFlag/0190c5a0?x=1')).toBe(first!.name)
      expect(of('/fhir/R4/UnitTestFlag')).toBe(first!.name)
      expect(of('/fhir/R4/Patient/1')).toBeUndefined()
      expect(of('/fhir/R4')).toBeUndefined()
      expect(of(`/${Object.keys(first!.families)[0]}`)).toBe(first!.name)
    })
    jest.dontMock('../../src/service-list')
  })

  it('is addressed to the service owning the path family unless told otherwise', async () => {
    expect(audienceOf('/patients')).toBe('patients')
    expect(audienceOf('/internal/patients/0190c5a0?x=1')).toBe('patients')
    expect(audienceOf('/appointments/1/checkin')).toBe('appointments')
    expect(audienceOf('/comms/webhooks/twilio')).toBe('comms')
    expect(audienceOf('/audit/events')).toBe('audit')
    expect(audienceOf('/internal')).toBeUndefined()
    expect(audienceOf('/nothing')).toBeUndefined()
    expect(audienceOf('/fhir/R4/NoSuchType/1')).toBeUndefined()
    const who = { auth: testPrincipal(), requestId: 'req-2' }
    const claimsOf = (h: Record<string, string>) => fromB64(h[ASSERTION_HEADER]!.split('.')[1]!)
    expect(
      claimsOf(await assertionHeaders(who, { method: 'GET', path: '/internal/appointments/x' }, signer)),
    ).toMatchObject({ aud: 'appointments' })
    expect(
      claimsOf(await assertionHeaders(who, { method: 'GET', path: '/patients', audience: 'comms' }, signer)),
    ).toMatchObject({ aud: 'comms' })
    await expect(assertionHeaders(who, { method: 'GET', path: '/nothing' }, signer)).rejects.toThrow(
      /audience/,
    )
  })
})
