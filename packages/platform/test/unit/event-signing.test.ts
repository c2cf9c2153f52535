import { checkEventSignature, eventKeysBySource, makeEvent, signEvent } from '@clinic/platform'

const secret = 'k'.repeat(32)
const event = () =>
  makeEvent({
    type: 'comms.message.sent',
    source: 'clinic/comms',
    data: {
      id: 'm1',
      patient_id: 'p1',
      appointment_id: null,
      channel: 'email',
      recipient_role: 'guardian',
      status: 'sent',
    },
    companyId: 7,
  })

describe('event signatures', () => {
  test('a signed event checks, also after its keys were reordered (as jsonb does)', () => {
    const signed = signEvent(event(), secret)
    expect(signed.signature).toMatch(/^v1\.[A-Za-z0-9_-]{43}$/)
    expect(checkEventSignature(signed, secret)).toBe('ok')
    const reordered = JSON.parse(JSON.stringify(Object.fromEntries(Object.entries(signed).reverse())))
    expect(checkEventSignature(reordered, secret)).toBe('ok')
  })

  test('unsigned, another key, a changed field, an added field or a garbled signature do not', () => {
    const signed = signEvent(event(), secret)
    expect(checkEventSignature({ ...event() }, secret)).toBe('unsigned')
    expect(checkEventSignature(signEvent(event(), 'x'.repeat(32)), secret)).toBe('bad_signature')
    expect(checkEventSignature({ ...signed, idempresa: 8 }, secret)).toBe('bad_signature')
    expect(checkEventSignature({ ...signed, actorname: 'mallory' }, secret)).toBe('bad_signature')
    expect(checkEventSignature({ ...signed, signature: 'v1.short' }, secret)).toBe('bad_signature')
    expect(checkEventSignature({ ...signed, signature: 42 }, secret)).toBe('bad_signature')
  })

  test('with keys per source, an event is checked with its own source key; a source without one is refused', () => {
    const keys = eventKeysBySource([`comms=${'c'.repeat(32)}`, `gateway=${'g'.repeat(32)}`])
    expect(keys).toEqual({ 'clinic/comms': 'c'.repeat(32), 'clinic/gateway': 'g'.repeat(32) })
    expect(checkEventSignature(signEvent(event(), 'c'.repeat(32)), keys)).toBe('ok')
    expect(checkEventSignature(signEvent(event(), 'g'.repeat(32)), keys)).toBe('bad_signature')
    expect(
      checkEventSignature(signEvent(event(), 'c'.repeat(32)), { 'clinic/gateway': 'g'.repeat(32) }),
    ).toBe('bad_signature')
    for (const bad of [['comms'], ['=x'], ['Comms=' + 'c'.repeat(32)], ['comms=short']])
      expect(() => eventKeysBySource(bad)).toThrow(/EVENT_VERIFY_KEYS/)
  })
})
