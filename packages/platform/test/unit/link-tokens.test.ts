import { createHmac, generateKeyPairSync } from 'node:crypto'
import { CompactSign, SignJWT } from 'jose'
import { Type } from '@sinclair/typebox'
import {
  LINK_TYPE,
  LinkClaim,
  linkCtx,
  linkKind,
  linkLanguageOf,
  openLink,
  signLink,
  verifyLink,
} from '@clinic/platform/core'
import pino from 'pino'

const SECRET = 'unit-link-secret-0123456789abcdef0123456789'
const key = new TextEncoder().encode(SECRET)
const now = new Date('2026-06-01T00:00:00Z')
/** Two kinds, as a service declares its own: one expiring, one not. */
const APPOINTMENT = linkKind({
  purpose: 'appointment',
  claims: Type.Object({
    id: LinkClaim.id,
    companyId: LinkClaim.companyId,
    appointmentId: LinkClaim.id,
    lang: LinkClaim.lang,
    exp: LinkClaim.exp,
  }),
})
const UNSUBSCRIBE = linkKind({
  purpose: 'unsubscribe',
  claims: Type.Object({ companyId: LinkClaim.companyId, messageId: Type.String(), lang: LinkClaim.lang }),
})
const link = {
  id: '0190a000-0000-7000-8000-000000000001',
  companyId: 7,
  appointmentId: '0190a000-0000-7000-8000-000000000002',
  lang: 'es',
  exp: Date.parse('2026-06-02T00:00:00Z') / 1000,
}
const b64 = (s: string) => Buffer.from(s).toString('base64url')
const header = { alg: 'HS256', typ: LINK_TYPE }

/** A JWS over any payload text under the secret: what only a holder of the secret can make. */
const signedText = (json: string, h: Record<string, unknown> = header) =>
  new CompactSign(Buffer.from(json)).setProtectedHeader(h as { alg: string }).sign(key)

describe('link tokens', () => {
  it('are JWTs (HS256, typ clinic-link+jwt) whose audience is their purpose', async () => {
    const token = await signLink(SECRET, APPOINTMENT, link)
    const [h, payload, , extra] = token.split('.')
    expect(extra).toBeUndefined()
    expect(JSON.parse(Buffer.from(h!, 'base64url').toString())).toEqual(header)
    expect(JSON.parse(Buffer.from(payload!, 'base64url').toString())).toEqual({
      ...link,
      aud: 'clinic-link:appointment',
    })
  })

  it('verifies a token made by hand by the steps of RFC 7515 (HMAC-SHA256 over header.payload)', async () => {
    const input = `${b64(JSON.stringify(header))}.${b64(JSON.stringify({ ...link, aud: 'clinic-link:appointment' }))}`
    const token = `${input}.${createHmac('sha256', SECRET).update(input).digest('base64url')}`
    expect(await verifyLink(SECRET, APPOINTMENT, token, now)).toEqual({ ok: true, claims: link })
    expect(await signLink(SECRET, APPOINTMENT, link)).toBe(token)
  })

  it('verifies its own tokens until they expire (a kind whose claims have exp), for their purpose only', async () => {
    expect([APPOINTMENT.expires, UNSUBSCRIBE.expires]).toEqual([true, false])
    const token = await signLink(SECRET, APPOINTMENT, link)
    expect(await verifyLink(SECRET, APPOINTMENT, token, now)).toEqual({ ok: true, claims: link })
    expect(await verifyLink(SECRET, APPOINTMENT, token, new Date(link.exp * 1000))).toEqual({
      ok: false,
      reason: 'expired',
    })
    expect(await verifyLink(SECRET, UNSUBSCRIBE, token, now)).toEqual({ ok: false, reason: 'altered' })
    // Unsubscribe links do not expire.
    const unsubscribe = { companyId: 7, messageId: 'm', lang: 'en' }
    const u = await signLink(SECRET, UNSUBSCRIBE, unsubscribe)
    expect(await verifyLink(SECRET, UNSUBSCRIBE, u, new Date('2036-01-01T00:00:00Z'))).toEqual({
      ok: true,
      claims: unsubscribe,
    })
  })

  it('refuses another key, `alg: none`, another algorithm, a tampered payload and an appointment link without expiry', async () => {
    const token = await signLink(SECRET, APPOINTMENT, link)
    const [h, payload, signature] = token.split('.') as [string, string, string]
    // Signed with another secret.
    expect(await verifyLink(`${SECRET}x`, APPOINTMENT, token, now)).toEqual({
      ok: false,
      reason: 'altered',
    })
    // alg none: the payload as is, no signature.
    const none = `${b64(JSON.stringify({ alg: 'none', typ: LINK_TYPE }))}.${payload}.`
    expect(await verifyLink(SECRET, APPOINTMENT, none, now)).toEqual({ ok: false, reason: 'altered' })
    // Another company under the original signature.
    const forged = b64(JSON.stringify({ ...link, companyId: 8, aud: 'clinic-link:appointment' }))
    expect(await verifyLink(SECRET, APPOINTMENT, `${h}.${forged}.${signature}`, now)).toEqual({
      ok: false,
      reason: 'altered',
    })
    // HS512 under the same secret, and EdDSA with a key of the forger's: only HS256 is taken.
    const claims = { ...link, aud: 'clinic-link:appointment' }
    const hs512 = await new SignJWT(claims).setProtectedHeader({ alg: 'HS512', typ: LINK_TYPE }).sign(key)
    expect(await verifyLink(SECRET, APPOINTMENT, hs512, now)).toEqual({ ok: false, reason: 'altered' })
    const ed = await new SignJWT(claims)
      .setProtectedHeader({ alg: 'EdDSA', typ: LINK_TYPE })
      .sign(generateKeyPairSync('ed25519').privateKey)
    expect(await verifyLink(SECRET, APPOINTMENT, ed, now)).toEqual({ ok: false, reason: 'altered' })
    // A signed appointment link without exp would never expire: refused.
    const { exp: _exp, ...noExp } = claims
    expect(await verifyLink(SECRET, APPOINTMENT, await signedText(JSON.stringify(noExp)), now)).toEqual({
      ok: false,
      reason: 'altered',
    })
    // Another typ (a JWT made for something else) under the same secret.
    const otherTyp = await signedText(JSON.stringify(claims), { alg: 'HS256', typ: 'JWT' })
    expect(await verifyLink(SECRET, APPOINTMENT, otherTyp, now)).toEqual({ ok: false, reason: 'altered' })
  })

  it('calls anything else altered, never throws: cut, extra parts, junk, and signed JSON that is no object', async () => {
    const token = await signLink(SECRET, APPOINTMENT, link)
    for (const bad of [
      token.slice(0, -2),
      `${token}.x`,
      '',
      '.',
      'a'.repeat(2000),
      await signedText('null'),
      await signedText('42'),
      await signedText('"x"'),
      await signedText('{not json'),
    ])
      expect(await verifyLink(SECRET, APPOINTMENT, bad, now)).toEqual({ ok: false, reason: 'altered' })
  })

  it("refuses signed claims that are not the kind's (an id that is no UUID, no company), and another typ", async () => {
    for (const claims of [
      { ...link, id: 'not-a-uuid' },
      { ...link, companyId: 0 },
      { ...link, companyId: 1.5 },
      { id: link.id, companyId: 7, lang: 'es', exp: link.exp },
    ])
      expect(
        await verifyLink(SECRET, APPOINTMENT, await signLink(SECRET, APPOINTMENT, claims as never), now),
      ).toEqual({ ok: false, reason: 'altered' })
    // A kind that kept its first links' typ: its tokens and the default typ's never pass for each other.
    const own = linkKind({ ...APPOINTMENT, typ: 'clinic-consent-link+jwt' })
    const token = await signLink(SECRET, own, link)
    expect(JSON.parse(Buffer.from(token.split('.')[0]!, 'base64url').toString())).toEqual({
      alg: 'HS256',
      typ: 'clinic-consent-link+jwt',
    })
    expect(await verifyLink(SECRET, own, token, now)).toEqual({ ok: true, claims: link })
    expect(await verifyLink(SECRET, APPOINTMENT, token, now)).toEqual({ ok: false, reason: 'altered' })
    expect(await verifyLink(SECRET, own, await signLink(SECRET, APPOINTMENT, link), now)).toEqual({
      ok: false,
      reason: 'altered',
    })
  })

  it("reads a token's language unverified (an expired or altered link's page speaks it), nothing of junk", async () => {
    const token = await signLink(`${SECRET}x`, APPOINTMENT, { ...link, lang: 'en-GB' })
    expect(linkLanguageOf(token)).toBe('en-GB')
    expect(
      linkLanguageOf(await signLink(SECRET, UNSUBSCRIBE, { companyId: 7, messageId: 'm', lang: 'es' })),
    ).toBe('es')
    for (const junk of ['', 'x', 'a.b.c', `${token.split('.')[0]}.${b64('{"lang":7}')}.x`, 'a'.repeat(2000)])
      expect(linkLanguageOf(junk)).toBeUndefined()
  })
})

describe('openLink: a page link, or the page that says why not', () => {
  it('gives the claims of a good link', async () => {
    const token = await signLink(SECRET, APPOINTMENT, link)
    expect(await openLink(SECRET, APPOINTMENT, token, now)).toEqual({ link: expect.objectContaining(link) })
  })

  it('is invalid without a secret, for an altered token or another kind; expired past exp', async () => {
    const token = await signLink(SECRET, APPOINTMENT, link)
    expect(await openLink(undefined, APPOINTMENT, token, now)).toEqual({ page: { kind: 'invalid' } })
    expect(await openLink(SECRET, APPOINTMENT, `${token}x`, now)).toEqual({ page: { kind: 'invalid' } })
    expect(await openLink(SECRET, UNSUBSCRIBE, token, now)).toEqual({ page: { kind: 'invalid' } })
    const later = new Date((link.exp + 1) * 1000)
    expect(await openLink(SECRET, APPOINTMENT, token, later)).toEqual({ page: { kind: 'expired' } })
  })
})

describe('linkCtx: who acts through a link', () => {
  it('is the company of the token as the actor named, with no user, token or centers, in the trace', () => {
    const log = pino({ level: 'silent' })
    const traceparent = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01'
    const ctx = linkCtx(7, 'patient-link', { log, requestId: 'r-1', traceparent })
    expect(ctx).toMatchObject({
      auth: {
        companyId: 7,
        userId: '',
        username: 'patient-link',
        tokenId: '',
        companyCenters: [],
        allowedCenters: null,
      },
      requestId: 'r-1',
      traceparent,
    })
    expect(ctx.tracestate).toBeUndefined()
  })
})
