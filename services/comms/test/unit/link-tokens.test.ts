import { createHmac } from 'node:crypto'
import { signLink, verifyLink } from '../../src/links/tokens'

const SECRET = 'unit-link-secret-0123456789abcdef0123456789'
const now = new Date('2026-06-01T00:00:00Z')
const link = {
  id: 'r',
  companyId: 7,
  appointmentId: 'a',
  lang: 'es',
  exp: Date.parse('2026-06-02T00:00:00Z') / 1000,
}

/** A token whose MAC is right over any payload text: what only a holder of the secret can make. */
const signedText = (purpose: string, json: string) => {
  const body = Buffer.from(json).toString('base64url')
  const mac = createHmac('sha256', SECRET).update(`clinic-link:${purpose}:${body}`).digest('base64url')
  return `${body}.${mac}`
}

describe('link tokens', () => {
  it('verifies its own tokens until they expire, for their purpose only', () => {
    const token = signLink(SECRET, 'appointment', link)
    expect(verifyLink(SECRET, 'appointment', token, now)).toEqual({ ok: true, payload: link })
    expect(verifyLink(SECRET, 'appointment', token, new Date(link.exp * 1000))).toEqual({
      ok: false,
      reason: 'expired',
    })
    expect(verifyLink(SECRET, 'unsubscribe', token, now)).toEqual({ ok: false, reason: 'altered' })
    expect(verifyLink(`${SECRET}x`, 'appointment', token, now)).toEqual({ ok: false, reason: 'altered' })
  })

  it('calls anything else altered, never throws: cut, extra parts, junk, and signed JSON that is no object', () => {
    const token = signLink(SECRET, 'appointment', link)
    for (const bad of [
      token.slice(0, -2),
      `${token}.x`,
      '',
      '.',
      'a'.repeat(2000),
      signedText('appointment', 'null'),
      signedText('appointment', '42'),
      signedText('appointment', '"x"'),
      signedText('appointment', '{not json'),
    ])
      expect(verifyLink(SECRET, 'appointment', bad, now)).toEqual({ ok: false, reason: 'altered' })
  })
})
