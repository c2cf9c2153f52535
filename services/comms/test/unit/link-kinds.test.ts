import { signLink, verifyLink } from '@clinic/platform/core'
import { APPOINTMENT_LINK, UNSUBSCRIBE_LINK } from '../../src/domain/link-kinds'

/**
 * Links already sent keep opening: tokens made by comms' own links/tokens.ts before the platform's
 * link kit (these strings, under this secret) verify as they did, and the kit makes the same bytes.
 */
const SECRET = 'a-link-secret-of-at-least-32-characters!'
const BEFORE = {
  appointment:
    'eyJhbGciOiJIUzI1NiIsInR5cCI6ImNsaW5pYy1saW5rK2p3dCJ9.eyJpZCI6IjAxOTBhMDAwLTAwMDAtNzAwMC04MDAwLTAwMDAwMDAwMDAwMSIsImNvbXBhbnlJZCI6NywiYXBwb2ludG1lbnRJZCI6IjAxOTBhMDAwLTAwMDAtNzAwMC04MDAwLTAwMDAwMDAwMDAwMiIsImxhbmciOiJlbiIsImV4cCI6NDEwMjQ0NDgwMCwiYXVkIjoiY2xpbmljLWxpbms6YXBwb2ludG1lbnQifQ.TZ5g_0THutSwPEbLoRr5-NDb38h2ssOLnkIRAtgcVgY',
  unsubscribe:
    'eyJhbGciOiJIUzI1NiIsInR5cCI6ImNsaW5pYy1saW5rK2p3dCJ9.eyJjb21wYW55SWQiOjcsIm1lc3NhZ2VJZCI6IjAxOTBhMDAwLTAwMDAtNzAwMC04MDAwLTAwMDAwMDAwMDAwMyIsImxhbmciOiJlcyIsImF1ZCI6ImNsaW5pYy1saW5rOnVuc3Vic2NyaWJlIn0.-FamQC38DQcs0pfAr5lq_xuuWCDGGqDCsJ4NgZU7n44',
}
const appointment = {
  id: '0190a000-0000-7000-8000-000000000001',
  companyId: 7,
  appointmentId: '0190a000-0000-7000-8000-000000000002',
  lang: 'en',
  exp: 4102444800,
}
const unsubscribe = { companyId: 7, messageId: '0190a000-0000-7000-8000-000000000003', lang: 'es' }
const now = new Date('2026-06-01T00:00:00Z')

describe("comms' links, made before the link kit", () => {
  it('open as before', async () => {
    expect(await verifyLink(SECRET, APPOINTMENT_LINK, BEFORE.appointment, now)).toEqual({
      ok: true,
      claims: appointment,
    })
    expect(await verifyLink(SECRET, UNSUBSCRIBE_LINK, BEFORE.unsubscribe, now)).toEqual({
      ok: true,
      claims: unsubscribe,
    })
    // Each kind still only its own.
    expect(await verifyLink(SECRET, UNSUBSCRIBE_LINK, BEFORE.appointment, now)).toMatchObject({ ok: false })
  })

  it('are what the kit makes today, to the byte', async () => {
    expect(await signLink(SECRET, APPOINTMENT_LINK, appointment)).toBe(BEFORE.appointment)
    expect(await signLink(SECRET, UNSUBSCRIBE_LINK, unsubscribe)).toBe(BEFORE.unsubscribe)
  })

  it('expire when they did', async () => {
    expect(
      await verifyLink(SECRET, APPOINTMENT_LINK, BEFORE.appointment, new Date(4102444800 * 1000)),
    ).toEqual({
      ok: false,
      reason: 'expired',
    })
  })
})
