import { afterQuietHours } from '../../src/reminders/schedule'
import { knownTimeZone, sendWindow, sendWindowFieldErrors } from '../../src/waitlist/send-window'

const MADRID = 'Europe/Madrid'
const night = { start: '21:00', end: '08:00' }
const after = (iso: string, quiet: { start: string; end: string } | null, zone = MADRID) =>
  afterQuietHours(new Date(iso), quiet, zone).toISOString()

describe('the send window: the first instant outside the quiet hours', () => {
  it('is the instant itself outside them, or without any', () => {
    expect(after('2026-06-10T10:00:00.000Z', night)).toBe('2026-06-10T10:00:00.000Z')
    expect(after('2026-06-10T23:00:00.000Z', null)).toBe('2026-06-10T23:00:00.000Z')
    // 20:59:59 local is not yet quiet; 08:00 is no longer.
    expect(after('2026-06-10T18:59:59.000Z', night)).toBe('2026-06-10T18:59:59.000Z')
    expect(after('2026-06-11T06:00:00.000Z', night)).toBe('2026-06-11T06:00:00.000Z')
  })

  it('is their end, local time: the next morning late at night, the same morning after midnight', () => {
    // 22:30 CEST on 10 June -> 08:00 CEST on 11 June.
    expect(after('2026-06-10T20:30:00.000Z', night)).toBe('2026-06-11T06:00:00.000Z')
    // 21:00 sharp is quiet.
    expect(after('2026-06-10T19:00:00.000Z', night)).toBe('2026-06-11T06:00:00.000Z')
    // 06:15:30 CEST -> 08:00 the same day.
    expect(after('2026-06-11T04:15:30.000Z', night)).toBe('2026-06-11T06:00:00.000Z')
    // Within a day: 14:30 of 14:00-16:00 -> 16:00.
    expect(after('2026-06-10T12:30:00.000Z', { start: '14:00', end: '16:00' })).toBe(
      '2026-06-10T14:00:00.000Z',
    )
  })

  it("in the zone it is asked for, not the server's", () => {
    // 10:00Z is 06:00 in New York (quiet): 08:00 EDT is 12:00Z.
    expect(after('2026-06-10T10:00:00.000Z', night, 'America/New_York')).toBe('2026-06-10T12:00:00.000Z')
    expect(after('2026-06-10T10:00:00.000Z', night, 'Asia/Tokyo')).toBe('2026-06-10T10:00:00.000Z')
  })

  it('across the spring DST change: the night is an hour shorter (Madrid, 29 March 2026)', () => {
    // 23:00 CET on Saturday 28 -> 08:00 CEST on Sunday 29 (06:00Z), 8 hours later, not 9.
    expect(after('2026-03-28T22:00:00.000Z', night)).toBe('2026-03-29T06:00:00.000Z')
    // 01:30 CET, before the change -> 08:00 CEST.
    expect(after('2026-03-29T00:30:00.000Z', night)).toBe('2026-03-29T06:00:00.000Z')
  })

  it('across the autumn DST change: the night is an hour longer (Madrid, 25 October 2026)', () => {
    // 22:00 CEST on Saturday 24 -> 08:00 CET on Sunday 25 (07:00Z), 11 hours later.
    expect(after('2026-10-24T20:00:00.000Z', night)).toBe('2026-10-25T07:00:00.000Z')
    // In the repeated hour: 02:15 CEST (00:15Z) and 02:15 CET (01:15Z) both end at 08:00 CET.
    expect(after('2026-10-25T00:15:00.000Z', night)).toBe('2026-10-25T07:00:00.000Z')
    expect(after('2026-10-25T01:15:00.000Z', night)).toBe('2026-10-25T07:00:00.000Z')
  })

  it('quiet hours that end in the repeated hour end at the wall time that follows, never in the past', () => {
    const early = { start: '01:00', end: '02:30' }
    // 02:15 CEST (the first pass): 02:30 CEST, 00:30Z.
    expect(after('2026-10-25T00:15:00.000Z', early)).toBe('2026-10-25T00:30:00.000Z')
    // 02:15 CET (the second pass, 01:15Z): 02:30 CET, 01:30Z; the first 02:30 had gone.
    expect(after('2026-10-25T01:15:20.000Z', early)).toBe('2026-10-25T01:30:00.000Z')
  })
})

describe('sendWindow: the company’s quiet hours, from its reminder policy', () => {
  const ctx = { auth: { companyId: 7 } } as Parameters<typeof sendWindow>[0]
  it('reads the policy of the caller’s company and answers RFC 3339 UTC', async () => {
    const asked: number[] = []
    const store = {
      policy: async (companyId: number) => {
        asked.push(companyId)
        return { quiet_hours: night }
      },
    }
    expect(await sendWindow(ctx, store, { at: '2026-06-10T22:30:00+02:00', time_zone: MADRID })).toEqual({
      at: '2026-06-11T06:00:00.000Z',
    })
    expect(await sendWindow(ctx, store, { at: '2026-06-10T12:00:00+02:00', time_zone: MADRID })).toEqual({
      at: '2026-06-10T10:00:00.000Z',
    })
    expect(asked).toEqual([7, 7])
  })

  it('refuses a time zone the runtime does not know, by name', () => {
    expect(knownTimeZone('Europe/Madrid')).toBe(true)
    expect(knownTimeZone('Mars/Olympus')).toBe(false)
    expect(sendWindowFieldErrors({ at: '2026-06-10T10:00:00Z', time_zone: 'Mars/Olympus' })).toEqual([
      { path: '/time_zone', message: 'is not a time zone this service knows (IANA name)' },
    ])
    expect(sendWindowFieldErrors({ time_zone: 'America/New_York' })).toEqual([])
    expect(sendWindowFieldErrors(null)).toEqual([])
  })
})
