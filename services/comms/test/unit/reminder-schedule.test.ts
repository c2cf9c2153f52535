import { planReminders } from '../../src/reminders/plan'
import { dueAt, outOfQuietHours, parseOffset, zonedInstant } from '../../src/reminders/schedule'
import type { ReminderPolicy } from '../../src/schemas/reminder'

const MADRID = 'Europe/Madrid'
const at = (iso: string) => new Date(iso)
const off = (iso: string) => parseOffset(iso)!

describe('reminder offsets', () => {
  it('reads ISO 8601 durations of weeks, days, hours and minutes', () => {
    expect(parseOffset('P1D')).toEqual({ days: 1, ms: 0 })
    expect(parseOffset('PT2H')).toEqual({ days: 0, ms: 7_200_000 })
    expect(parseOffset('P1DT12H30M')).toEqual({ days: 1, ms: 45_000_000 })
    expect(parseOffset('P2W')).toEqual({ days: 14, ms: 0 })
    for (const bad of ['P', 'PT', '1D', 'P1H', 'P1DT', 'p1d', 'P1.5D', 'P1Y'])
      expect(parseOffset(bad)).toBeNull()
  })

  it('counts days on the local calendar across the spring DST change (Madrid, 29 March 2026)', () => {
    // 10:00 CEST on Monday 30 March is 08:00Z; a day before is 10:00 CEST on Sunday 29 (08:00Z),
    // not 24 hours before (09:00Z: 11:00 local).
    expect(dueAt(at('2026-03-30T08:00:00Z'), off('P1D'), MADRID).toISOString()).toBe(
      '2026-03-29T08:00:00.000Z',
    )
    // One day before 10:00 CEST on Sunday 29 is 10:00 CET on Saturday 28 (09:00Z): 23 hours earlier.
    expect(dueAt(at('2026-03-29T08:00:00Z'), off('P1D'), MADRID).toISOString()).toBe(
      '2026-03-28T09:00:00.000Z',
    )
  })

  it('counts days on the local calendar across the autumn change, and hours as elapsed time', () => {
    // 09:00 CET on Sunday 25 October (08:00Z); a day before is 09:00 CEST on Saturday 24 (07:00Z):
    // 25 hours earlier.
    expect(dueAt(at('2026-10-25T08:00:00Z'), off('P1D'), MADRID).toISOString()).toBe(
      '2026-10-24T07:00:00.000Z',
    )
    // PT2H before 03:30 CET on 25 October (02:30Z) is two real hours: 00:30Z (02:30 CEST).
    expect(dueAt(at('2026-10-25T02:30:00Z'), off('PT2H'), MADRID).toISOString()).toBe(
      '2026-10-25T00:30:00.000Z',
    )
  })

  it('reads a wall time skipped by DST with the offset before it, a repeated one as its first occurrence', () => {
    const w = { year: 2026, month: 3, day: 29, hour: 2, minute: 30 }
    expect(new Date(zonedInstant(w, MADRID)).toISOString()).toBe('2026-03-29T01:30:00.000Z')
    const twice = { year: 2026, month: 10, day: 25, hour: 2, minute: 30 }
    expect(new Date(zonedInstant(twice, MADRID)).toISOString()).toBe('2026-10-25T00:30:00.000Z')
    expect(new Date(zonedInstant(w, 'America/New_York')).toISOString()).toBe('2026-03-29T06:30:00.000Z')
  })
})

describe('quiet hours', () => {
  const night = { start: '21:00', end: '08:00' }

  it('moves a reminder due at night to the last minute before the quiet hours began', () => {
    // 06:00 local on 10 June (04:00Z) -> 20:59 local on 9 June (18:59Z).
    expect(outOfQuietHours(at('2026-06-10T04:00:00Z'), night, MADRID).toISOString()).toBe(
      '2026-06-09T18:59:00.000Z',
    )
    // 22:30 local -> 20:59 the same evening.
    expect(outOfQuietHours(at('2026-06-10T20:30:00Z'), night, MADRID).toISOString()).toBe(
      '2026-06-10T18:59:00.000Z',
    )
  })

  it('leaves a reminder outside them alone, in the appointment’s own time zone', () => {
    const day = at('2026-06-10T10:00:00Z')
    expect(outOfQuietHours(day, night, MADRID)).toEqual(day)
    expect(outOfQuietHours(day, null, MADRID)).toEqual(day)
    // 10:00Z is 06:00 in New York: quiet there.
    expect(outOfQuietHours(day, night, 'America/New_York').toISOString()).toBe('2026-06-10T00:59:00.000Z')
  })

  it('handles quiet hours within a day and on the night the clocks go back', () => {
    const lunch = { start: '14:00', end: '16:00' }
    expect(outOfQuietHours(at('2026-06-10T12:30:00Z'), lunch, MADRID).toISOString()).toBe(
      '2026-06-10T11:59:00.000Z',
    )
    // 07:00 CET on 25 October (06:00Z) is quiet; they began at 21:00 CEST on the 24th (19:00Z).
    expect(outOfQuietHours(at('2026-10-25T06:00:00Z'), night, MADRID).toISOString()).toBe(
      '2026-10-24T18:59:00.000Z',
    )
  })
})

describe('planning an appointment’s reminders', () => {
  const policy: ReminderPolicy = {
    enabled: true,
    offsets: ['P1D', 'PT2H'],
    quiet_hours: { start: '21:00', end: '08:00' },
    confirm_links: true,
    updated_at: null,
    version: 1,
  }
  const slot = {
    id: 'a',
    patient_id: 'p',
    codalmacen: 'C1',
    starts_at: '2026-06-12T07:30:00Z', // 09:30 local
    time_zone: MADRID,
    status: 'scheduled',
    version: 1,
    active: true,
  }

  it('plans one reminder per offset, out of quiet hours', () => {
    const plan = planReminders(slot, policy, at('2026-06-09T10:00:00Z'))
    expect(plan).toEqual([
      { offset: 'P1D', dueAt: at('2026-06-11T07:30:00Z'), skipped: null },
      // 07:30 local is quiet: 20:59 the evening before.
      { offset: 'PT2H', dueAt: at('2026-06-11T18:59:00Z'), skipped: null },
    ])
  })

  it('skips what was already past when booked, and plans nothing when off or not remindable', () => {
    const late = planReminders(slot, policy, at('2026-06-11T19:30:00Z'))
    expect(late.map((p) => p.skipped !== null)).toEqual([true, true])
    expect(late[1]!.skipped).toMatch(/quiet hours/)
    expect(planReminders(slot, { ...policy, enabled: false }, at('2026-06-09T10:00:00Z'))).toEqual([])
    expect(planReminders({ ...slot, active: false }, policy, at('2026-06-09T10:00:00Z'))).toEqual([])
  })
})
