import { ValidationFailed } from '@clinic/platform/core'
import { planOf, planSeries, splitRule } from '../../src/domain/series-plan'
import { parseRule, type Rule } from '../../src/domain/series-rule'
import { instantOf, parseStart, wallOn, wallText, zoneOffsetError } from '../../src/domain/series-zone'

/** The pure parts of a series (DESIGN.md section 20): zone arithmetic, the rule subset, the plan. */

const iso = (t: number) => new Date(t).toISOString()
const ruleOf = (text: string): Rule => {
  const r = parseRule(text)
  if ('errors' in r) throw new Error(r.errors.join('; '))
  return r.rule
}

describe('wall time to instant (RFC 5545 3.3.5)', () => {
  // RFC 5545's own examples: TZID=America/New_York:20070311T023000 is 03:30 EDT (a gap);
  // 20071104T013000 is 01:30 EDT, the first of the two.
  test.each([
    ['America/New_York', '2007-03-11', '02:30', '2007-03-11T07:30:00.000Z'],
    ['America/New_York', '2007-11-04', '01:30', '2007-11-04T05:30:00.000Z'],
    ['Europe/Madrid', '2027-03-28', '02:00', '2027-03-28T01:00:00.000Z'],
    ['Europe/Madrid', '2027-03-28', '03:00', '2027-03-28T01:00:00.000Z'],
    ['Europe/Madrid', '2027-10-31', '02:59', '2027-10-31T00:59:00.000Z'],
    ['Europe/Madrid', '2027-10-31', '03:00', '2027-10-31T02:00:00.000Z'],
    // Sydney (southern hemisphere): AEDT (UTC+11) ends on the first Sunday of April 2027 (the 4th).
    ['Australia/Sydney', '2027-04-03', '09:00', '2027-04-02T22:00:00.000Z'],
    ['Australia/Sydney', '2027-04-05', '09:00', '2027-04-04T23:00:00.000Z'],
    ['UTC', '2027-06-01', '09:00', '2027-06-01T09:00:00.000Z'],
  ])('%s %s %s is %s', (zone, date, time, instant) => {
    expect(iso(instantOf(wallOn(date, time), zone))).toBe(instant)
  })
})

describe('start', () => {
  test("local date and time, seconds 00, an offset only if it is the zone's", () => {
    expect(wallText((parseStart('2027-03-22T09:30') as { wall: number }).wall)).toBe('2027-03-22T09:30')
    expect(parseStart('2027-03-22T09:30:00')).toEqual({ wall: Date.UTC(2027, 2, 22, 9, 30) })
    expect(parseStart('2027-02-30T09:30')).toEqual({ error: 'is not a real date and time' })
    expect(parseStart('2027-03-22 09:30')).toHaveProperty('error')
    const summer = parseStart('2027-07-01T09:00+02:00') as { wall: number; offsetMs: number }
    expect(zoneOffsetError(summer, 'Europe/Madrid')).toBeNull()
    expect(zoneOffsetError(summer, 'Europe/London')).toMatchObject({ path: '/start' })
    expect(zoneOffsetError(parseStart('2027-01-10T09:00Z') as { wall: number }, 'Europe/London')).toBeNull()
  })
})

describe('the rule subset', () => {
  test('reads what rrule reads, with an optional RRULE: prefix, in any case', () => {
    const r = ruleOf('rrule:freq=monthly;BYMONTHDAY=1,15;COUNT=4')
    expect(r).toMatchObject({ freq: 'MONTHLY', count: 4, options: { bymonthday: [1, 15] } })
    expect(ruleOf('FREQ=DAILY;UNTIL=20270401T120000Z').until).toEqual({
      form: 'utc',
      ms: Date.UTC(2027, 3, 1, 12),
    })
    expect(ruleOf('FREQ=DAILY;UNTIL=20270401').until).toEqual({ form: 'date', ms: Date.UTC(2027, 3, 1) })
  })

  test('lists every problem of its values at once', () => {
    expect(parseRule('FREQ=WEEKLY;INTERVAL=0;BYMONTHDAY=2')).toEqual({
      errors: [
        'INTERVAL must be a whole number from 1 to 999',
        'needs an end: COUNT or UNTIL',
        'BYMONTHDAY cannot be used with FREQ=WEEKLY',
      ],
    })
  })
})

describe('the plan', () => {
  const plan = (o: { start: string; rrule: string; exdates?: string[]; zone?: string }) =>
    planSeries({
      start: (parseStart(o.start) as { wall: number }).wall,
      rule: ruleOf(o.rrule),
      exdates: o.exdates ?? [],
      zone: o.zone ?? 'Europe/Madrid',
      durationMinutes: 30,
    })

  test('an UNTIL in UTC is read in the zone; the rule is kept with UNTIL at the end of the last local day', () => {
    // 08:30Z on 29 March is 10:30 CEST: the 09:30 occurrence that day is before it.
    const p = plan({ start: '2027-03-22T09:30', rrule: 'FREQ=DAILY;UNTIL=20270329T083000Z' })
    expect(p.occurrences.map((o) => wallText(o.wall))).toHaveLength(8)
    expect(p.rrule).toBe('FREQ=DAILY;UNTIL=20270329T235959')
    expect(
      planOf({
        start: '2027-03-22T09:30',
        rrule: p.rrule,
        exdates: [],
        time_zone: 'Europe/Madrid',
        duration_minutes: 30,
      }).occurrences,
    ).toEqual(p.occurrences)
  })

  test('COUNT counts excluded dates (RFC 5545); a split keeps every instance on one side', () => {
    const p = plan({ start: '2027-03-01T09:00', rrule: 'FREQ=WEEKLY;COUNT=6', exdates: ['2027-03-15'] })
    expect(p.occurrences).toHaveLength(5)
    expect(splitRule(p, p.occurrences[2]!.wall)).toEqual({
      before: 'FREQ=WEEKLY;COUNT=3',
      after: 'FREQ=WEEKLY;COUNT=3',
    })
  })

  test('monthly on the 31st skips shorter months, as RFC 5545 says', () => {
    const p = plan({ start: '2027-01-31T09:00', rrule: 'FREQ=MONTHLY;COUNT=4' })
    expect(p.occurrences.map((o) => wallText(o.wall).slice(0, 10))).toEqual([
      '2027-01-31',
      '2027-03-31',
      '2027-05-31',
      '2027-07-31',
    ])
  })

  test('the limits are 400s', () => {
    expect(() => plan({ start: '2027-01-04T09:00', rrule: 'FREQ=WEEKLY;UNTIL=20290201' })).toThrow(
      ValidationFailed,
    )
    expect(() => plan({ start: '2027-01-04T09:00', rrule: 'FREQ=WEEKLY;COUNT=104' })).not.toThrow()
  })
})
