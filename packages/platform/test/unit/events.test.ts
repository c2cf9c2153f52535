import { isUuid, makeEvent, parseEvent, type CloudEvent } from '@clinic/platform'
import { appointmentEventData, testPrincipal } from '@clinic/platform/testing'

const data = appointmentEventData()

describe('makeEvent', () => {
  it('builds a CloudEvents 1.0 envelope with a UUIDv7 id and the clinic extensions', () => {
    const auth = testPrincipal({ companyId: 7 })
    const time = new Date('2026-11-22T09:30:00Z')
    const before = Date.now()
    const e = makeEvent({
      type: 'appointment.checked_in',
      source: 'clinic/appointments',
      subject: data.id,
      data,
      companyId: 7,
      codalmacen: 'ALM1',
      ctx: { auth, requestId: 'req-42' },
      time,
    })
    expect(e).toEqual({
      specversion: '1.0',
      id: expect.any(String),
      source: 'clinic/appointments',
      type: 'appointment.checked_in',
      time: '2026-11-22T09:30:00.000Z',
      subject: data.id,
      datacontenttype: 'application/json',
      idempresa: 7,
      codalmacen: 'ALM1',
      actorid: auth.userId,
      actorname: auth.username,
      actortokenid: auth.tokenId,
      requestid: 'req-42',
      data,
    })
    expect(isUuid(e.id)).toBe(true)
    expect(e.id[14]).toBe('7')
    // The id's first 48 bits are the creation time in ms (UUIDv7), not the event time.
    const ms = parseInt(e.id.replace(/-/g, '').slice(0, 12), 16)
    expect(ms).toBeGreaterThanOrEqual(before)
    expect(ms).toBeLessThanOrEqual(Date.now() + 5)
  })

  it('leaves out the optional extensions when there is nothing to put in them', () => {
    const e = makeEvent({
      type: 'appointment.checked_in',
      source: 'clinic/appointments',
      data,
      companyId: 7,
      codalmacen: null,
    })
    for (const k of ['subject', 'codalmacen', 'actorid', 'actorname', 'actortokenid', 'requestid'])
      expect(e).not.toHaveProperty(k)
    expect(Date.parse(e.time)).not.toBeNaN()
  })

  it('gives every event its own increasing id', () => {
    const ids = Array.from(
      { length: 50 },
      () => makeEvent({ type: 'appointment.checked_in', source: 's', data, companyId: 1 }).id,
    )
    expect(new Set(ids).size).toBe(50)
    expect([...ids].sort()).toEqual(ids)
  })
})

describe('parseEvent', () => {
  const good = makeEvent({
    type: 'appointment.checked_in',
    source: 'clinic/appointments',
    data,
    companyId: 7,
  })
  const buf = (v: unknown) => Buffer.from(typeof v === 'string' ? v : JSON.stringify(v))

  it('accepts a well-formed envelope and returns it', () => {
    expect(parseEvent(buf(good))).toEqual(good)
  })

  const broken: Array<[string, unknown]> = [
    ['not JSON', '{"specversion":'],
    ['JSON null', 'null'],
    ['a string', '"1.0"'],
    ['an array', '[]'],
    ['other specversion', { ...good, specversion: '0.3' }],
    ['no id', { ...good, id: undefined }],
    ['a non-uuid id', { ...good, id: 'evt-1' }],
    ['no type', { ...good, type: undefined }],
    ['a numeric type', { ...good, type: 5 }],
    ['no source', { ...good, source: undefined }],
    ['no time', { ...good, time: undefined }],
    ['an unparsable time', { ...good, time: 'yesterday' }],
    ['no idempresa', { ...good, idempresa: undefined }],
    ['a string idempresa', { ...good, idempresa: '7' }],
    ['a fractional idempresa', { ...good, idempresa: 7.5 }],
    ['no data', { ...good, data: undefined }],
    ['null data', { ...good, data: null }],
  ]
  it.each(broken)('rejects an envelope with %s', (_what, v) => {
    expect(parseEvent(buf(v as CloudEvent))).toBeNull()
  })
})
