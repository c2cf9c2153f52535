import { companyOf, outboxOf, startApp, type Company, type Harness } from '../helpers'
import {
  addDays,
  availability,
  availabilityUrl,
  everyDay,
  iso,
  localOf,
  manualClock,
  newPractitioner,
  overlaps,
  remove,
  zoned,
  type SlotJson,
} from './calendar-fixtures'

/**
 * Availability and working hours (DESIGN.md section 11): the slot grid stays on local
 * time across daylight-saving changes in both hemispheres; bad input is a 400 naming the field;
 * bookings outside hours are 422 unless overridden (and the event says so); time off blocks; a
 * conflict offers the next free slots. Local times are checked with Intl, not with the service's SQL.
 */

const START = '2031-01-01T00:00:00Z'
const clock = manualClock(START)
let h: Harness
beforeAll(async () => {
  h = await startApp({ poolMax: 6, clock: clock.now })
})
afterAll(() => h.close())
beforeEach(() => clock.set(START))

/** 09:00, 09:20, ... 13:40: the 20-minute slots of a 09:00-14:00 day. */
const MORNING = Array.from({ length: 15 }, (_, i) => {
  const m = 9 * 60 + 20 * i
  return `${String(Math.floor(m / 60)).padStart(2, '0')}:${String(m % 60).padStart(2, '0')}`
})

/** The slots by local date, as local "HH:MM"; every slot lasts `minutes`. */
function byLocalDay(slots: SlotJson[], zone: string, minutes = 20) {
  const days: Record<string, string[]> = {}
  for (const s of slots) {
    expect(Date.parse(s.ends_at) - Date.parse(s.starts_at)).toBe(minutes * 60_000)
    const { date, time } = localOf(s.starts_at, zone)
    ;(days[date] ??= []).push(time)
  }
  return days
}

describe('the grid across daylight-saving changes', () => {
  // Saturday, the Sunday of the change, Monday (2031's rules, as tzdata and PostgreSQL know them).
  const CHANGES: Array<[string, string, string]> = [
    ['Europe/Madrid', 'spring forward, last Sunday of March', '2031-03-29'],
    ['Europe/Madrid', 'fall back, last Sunday of October', '2031-10-25'],
    ['America/Santiago', 'fall back, first Sunday of April', '2031-04-05'],
    ['America/Santiago', 'spring forward, first Sunday of September', '2031-09-06'],
    ['Australia/Sydney', 'fall back, first Sunday of April', '2031-04-05'],
    ['Australia/Sydney', 'spring forward, first Sunday of October', '2031-10-04'],
  ]
  test.each(CHANGES)(
    '%s, %s: 09:00-13:40 local on Saturday, Sunday and Monday',
    async (zone, _change, saturday) => {
      const c = companyOf(h)
      const p = await newPractitioner(c, { time_zone: zone, working_hours: everyDay('09:00', '14:00') })
      const days = [saturday, addDays(saturday, 1), addDays(saturday, 2)]
      // The weekend really spans a change: Saturday's offset is not Monday's.
      const offset = (date: string) => localOf(zoned(date, '12:00', zone), zone).offsetMinutes
      expect(offset(days[0]!)).not.toBe(offset(days[2]!))
      expect(days.map((d) => localOf(zoned(d, '12:00', zone), zone).weekday)).toEqual([6, 7, 1])

      const slots = await availability(c, {
        from: iso(zoned(days[0]!, '00:00', zone)),
        to: iso(zoned(addDays(saturday, 3), '00:00', zone)),
      })
      expect(byLocalDay(slots, zone)).toEqual({
        [days[0]!]: MORNING,
        [days[1]!]: MORNING,
        [days[2]!]: MORNING,
      })
      for (const s of slots) expect(s).toMatchObject({ practitioner: p.id, codalmacen: 'ALM1' })
      // And each instant is that local time in that zone (the offset of its own day).
      for (const d of days) expect(slots.map((s) => s.starts_at)).toContain(iso(zoned(d, '09:00', zone)))
      // Bookings on the day of the change are checked against the same local hours.
      const sunday = days[1]!
      const book = (start: string, end: string) =>
        c.send('POST', '/appointments', {
          patient_id: c.newPatient(),
          practitioner: p.id,
          codalmacen: 'ALM1',
          starts_at: iso(zoned(sunday, start, zone)),
          ends_at: iso(zoned(sunday, end, zone)),
        })
      expect((await book('09:00', '09:20')).statusCode).toBe(201)
      expect((await book('13:40', '14:00')).statusCode).toBe(201)
      expect((await book('14:00', '14:20')).statusCode).toBe(422)
      expect((await book('08:40', '09:00')).statusCode).toBe(422)
    },
  )

  test('a booking keeps a Madrid slot on local time after the change; the next free slot is limit=1', async () => {
    const c = companyOf(h)
    const zone = 'Europe/Madrid'
    const p = await newPractitioner(c, { time_zone: zone, working_hours: everyDay('09:00', '14:00') })
    const at = zoned('2031-03-31', '09:00', zone)
    const res = await c.send('POST', '/appointments', {
      patient_id: c.newPatient(),
      practitioner: p.id,
      codalmacen: 'ALM1',
      starts_at: iso(at),
      ends_at: iso(at + 20 * 60_000),
    })
    expect(res.statusCode).toBe(201)
    const next = await availability(c, {
      from: iso(zoned('2031-03-31', '00:00', zone)),
      to: iso(at + 86_400_000),
      limit: 1,
    })
    expect(next).toEqual([
      {
        practitioner: p.id,
        codalmacen: 'ALM1',
        starts_at: iso(at + 20 * 60_000),
        ends_at: iso(at + 40 * 60_000),
      },
    ])
    expect(localOf(next[0]!.starts_at, zone).time).toBe('09:20')
  })
})

describe('what availability returns', () => {
  const MONDAY = '2031-06-09'
  const zone = 'Europe/Madrid'
  const at = (time: string, date = MONDAY) => iso(zoned(date, time, zone))
  const dayOf = (c: Company, q: Record<string, string | number | string[] | undefined> = {}) =>
    availability(c, { from: at('00:00'), to: at('24:00'), ...q })

  test('several practitioners, sorted by start then practitioner; only active ones working at the center', async () => {
    const c = companyOf(h)
    const second = await newPractitioner(c, {
      id: 'b-segunda',
      time_zone: zone,
      working_hours: everyDay('09:00', '10:00'),
    })
    const first = await newPractitioner(c, {
      id: 'a-primera',
      time_zone: zone,
      slot_minutes: 30,
      working_hours: everyDay('09:00', '10:00'),
    })
    await newPractitioner(c, { time_zone: zone, working_hours: everyDay('09:00', '10:00', 'ALM2') })
    await newPractitioner(c, { time_zone: zone, active: false, working_hours: everyDay('09:00', '10:00') })
    const all = await dayOf(c)
    expect(all.map((s) => [localOf(s.starts_at, zone).time, s.practitioner])).toEqual([
      ['09:00', first.id],
      ['09:00', second.id],
      ['09:20', second.id],
      ['09:30', first.id],
      ['09:40', second.id],
    ])
    expect((await dayOf(c, { practitioner: [first.id] })).map((s) => s.practitioner)).toEqual([
      first.id,
      first.id,
    ])
    expect(await dayOf(c, { limit: 1 })).toEqual([all[0]])
    // duration: 40-minute slots every slot length, that fit in the window.
    expect(
      (await dayOf(c, { duration: 40 })).map((s) => [localOf(s.starts_at, zone).time, s.practitioner]),
    ).toEqual([
      ['09:00', first.id],
      ['09:00', second.id],
      ['09:20', second.id],
    ])
  })

  test('minus the past: nothing starting before the clock', async () => {
    const c = companyOf(h)
    await newPractitioner(c, { time_zone: zone, working_hours: everyDay('09:00', '14:00') })
    clock.set(zoned(MONDAY, '10:10', zone))
    const times = (await dayOf(c)).map((s) => localOf(s.starts_at, zone).time)
    expect(times).toEqual(MORNING.filter((t) => t > '10:10'))
    clock.set(zoned(MONDAY, '15:00', zone))
    expect(await dayOf(c)).toEqual([])
  })

  test('time off blocks the slots it touches, and bookings there are 422 unless overridden', async () => {
    const c = companyOf(h)
    const p = await newPractitioner(c, { time_zone: zone, working_hours: everyDay('09:00', '14:00') })
    const res = await c.send('POST', `/practitioners/${p.id}/time-off`, {
      starts_at: at('10:10'),
      ends_at: at('11:00'),
      reason: 'formacion',
    })
    expect(res.statusCode).toBe(201)
    const off = res.json()
    expect(off).toEqual({
      id: expect.any(String),
      practitioner: p.id,
      starts_at: at('10:10'),
      ends_at: at('11:00'),
      reason: 'formacion',
      created_at: expect.stringMatching(/Z$/),
    })
    const times = async () => (await dayOf(c)).map((s) => localOf(s.starts_at, zone).time)
    expect(await times()).toEqual(MORNING.filter((t) => t < '10:00' || t >= '11:00'))
    const slot = { practitioner: p.id, codalmacen: 'ALM1', starts_at: at('10:20'), ends_at: at('10:40') }
    const held = await c.send('POST', '/appointments/holds', slot)
    expect(held.statusCode).toBe(422)
    expect(held.json().code).toBe('outside_working_hours')
    const booked = await c.send('POST', '/appointments', { ...slot, patient_id: c.newPatient() })
    expect(booked.statusCode).toBe(422)
    expect(booked.json().code).toBe('outside_working_hours')
    const forced = await c.send('POST', '/appointments', {
      ...slot,
      patient_id: c.newPatient(),
      outside_hours: true,
    })
    expect(forced.statusCode).toBe(201)
    expect((await remove(h, c, `/practitioners/${p.id}/time-off/${off.id}`)).statusCode).toBe(204)
    // Back, except the slot booked meanwhile.
    expect(await times()).toEqual(MORNING.filter((t) => t !== '10:20'))
  })

  test('422 outside_working_hours outside the hours; "outside_hours": true books and the event says so', async () => {
    const c = companyOf(h)
    const p = await newPractitioner(c, {
      time_zone: zone,
      working_hours: everyDay('09:00', '14:00', 'ALM1', [1, 2, 3, 4, 5]),
    })
    const slot = (start: string, end: string, date = MONDAY, codalmacen = 'ALM1') => ({
      practitioner: p.id,
      codalmacen,
      starts_at: at(start, date),
      ends_at: at(end, date),
    })
    const outside = [
      slot('14:00', '14:20'),
      slot('13:50', '14:10'),
      slot('08:50', '09:10'),
      slot('10:00', '10:20', '2031-06-14'), // a Saturday
      slot('10:00', '10:20', MONDAY, 'ALM2'), // another center
    ]
    for (const s of outside) {
      for (const url of ['/appointments', '/appointments/holds']) {
        const res = await c.send('POST', url, { ...s, patient_id: c.newPatient() })
        expect({ url, s, status: res.statusCode, code: res.json().code }).toEqual({
          url,
          s,
          status: 422,
          code: 'outside_working_hours',
        })
      }
    }
    const res = await c.send('POST', '/appointments', {
      ...outside[0],
      patient_id: c.newPatient(),
      outside_hours: true,
    })
    expect(res.statusCode).toBe(201)
    const [created] = await outboxOf(h.owner, c.principal.companyId, res.json().id)
    expect(created!.type).toBe('appointment.created')
    expect(created!.payload.data).toMatchObject({ id: res.json().id, outside_hours: true })
    // Inside the hours the flag changes nothing, and the event does not carry it.
    const inside = await c.send('POST', '/appointments', {
      ...slot('09:00', '09:20'),
      patient_id: c.newPatient(),
    })
    expect(inside.statusCode).toBe(201)
    const [plain] = await outboxOf(h.owner, c.principal.companyId, inside.json().id)
    expect(plain!.payload.data).not.toHaveProperty('outside_hours')
    // A move out of the hours: 422, unless overridden, and then appointment.updated says so.
    const away = { starts_at: at('16:00'), ends_at: at('16:20') }
    const moveOut = await c.send('PATCH', `/appointments/${inside.json().id}`, away)
    expect(moveOut.statusCode).toBe(422)
    expect(moveOut.json().code).toBe('outside_working_hours')
    const forced = await c.send('PATCH', `/appointments/${inside.json().id}`, {
      ...away,
      outside_hours: true,
    })
    expect(forced.statusCode).toBe(200)
    const events = await outboxOf(h.owner, c.principal.companyId, inside.json().id)
    expect(events.map((e) => e.type)).toEqual(['appointment.created', 'appointment.updated'])
    expect(events[1]!.payload.data).toMatchObject({ outside_hours: true })
    // An inactive practitioner takes nothing, even inside the hours.
    const patch = await c.send('PATCH', `/practitioners/${p.id}`, { active: false })
    expect(patch.statusCode).toBe(200)
    const inactive = await c.send('POST', '/appointments', {
      ...slot('10:00', '10:20'),
      patient_id: c.newPatient(),
    })
    expect(inactive.statusCode).toBe(422)
    expect(inactive.json().code).toBe('outside_working_hours')
    // An unregistered practitioner books as before, at any time.
    const free = await c.send('POST', '/appointments', {
      ...slot('22:00', '22:20'),
      practitioner: 'dr-sin-registro',
      patient_id: c.newPatient(),
    })
    expect(free.statusCode).toBe(201)
  })

  test('409 slot_conflict offers up to 3 next free slots of that practitioner, same length, from the start', async () => {
    const c = companyOf(h)
    const p = await newPractitioner(c, { time_zone: zone, working_hours: everyDay('09:00', '14:00') })
    const book = (start: string, end: string) =>
      c.send('POST', '/appointments', {
        practitioner: p.id,
        codalmacen: 'ALM1',
        starts_at: at(start),
        ends_at: at(end),
        patient_id: c.newPatient(),
      })
    for (const [s, e] of [
      ['09:00', '09:20'],
      ['09:40', '10:00'],
      ['10:40', '11:00'],
    ] as const)
      expect((await book(s, e)).statusCode).toBe(201)
    const taken = await book('09:00', '09:20')
    expect(taken.statusCode).toBe(409)
    expect(taken.json().code).toBe('slot_conflict')
    const alternatives: SlotJson[] = taken.json().alternatives
    expect(alternatives.map((s) => localOf(s.starts_at, zone).time)).toEqual(['09:20', '10:00', '10:20'])
    // Each is free (availability offers it), of that practitioner and center, 20 minutes long.
    const free = await dayOf(c)
    for (const alt of alternatives) {
      expect(alt).toMatchObject({ practitioner: p.id, codalmacen: 'ALM1' })
      expect(Date.parse(alt.ends_at) - Date.parse(alt.starts_at)).toBe(20 * 60_000)
      expect(free).toContainEqual(alt)
    }
    // A 40-minute request: 40-minute alternatives at or after its start, overlapping nothing booked.
    const longer = await book('09:20', '10:00')
    expect(longer.statusCode).toBe(409)
    const long: SlotJson[] = longer.json().alternatives
    expect(long.length).toBeGreaterThan(0)
    expect(long.length).toBeLessThanOrEqual(3)
    const booked = [
      ['09:00', '09:20'],
      ['09:40', '10:00'],
      ['10:40', '11:00'],
    ].map(([s, e]) => [Date.parse(at(s!)), Date.parse(at(e!))] as const)
    for (const alt of long) {
      const [s, e] = [Date.parse(alt.starts_at), Date.parse(alt.ends_at)]
      expect(e - s).toBe(40 * 60_000)
      expect(s).toBeGreaterThanOrEqual(Date.parse(at('09:20')))
      expect(booked.some(([b0, b1]) => overlaps(s, e, b0, b1))).toBe(false)
    }
    expect(long).toEqual(await dayOf(c, { from: at('09:20'), duration: 40, limit: 3 }))
    // A conflict with an unregistered practitioner has no alternatives to offer.
    const free1 = {
      practitioner: 'dr-sin-registro',
      codalmacen: 'ALM1',
      starts_at: at('09:00'),
      ends_at: at('09:20'),
    }
    expect((await c.send('POST', '/appointments', { ...free1, patient_id: c.newPatient() })).statusCode).toBe(
      201,
    )
    const again = await c.send('POST', '/appointments', { ...free1, patient_id: c.newPatient() })
    expect(again.statusCode).toBe(409)
    expect(again.json().alternatives ?? []).toEqual([])
  })
})

describe('bad input is a 400 naming the field', () => {
  const from = '2031-06-09T00:00:00Z'
  const plus = (ms: number) => iso(Date.parse(from) + ms)
  const DAY = 86_400_000
  test.each([
    ['to before from', { from, to: plus(-1) }, '/to'],
    ['to equal to from', { from, to: from }, '/to'],
    ['over 31 days', { from, to: plus(31 * DAY + 60_000) }, '/to'],
    ['a duration not a multiple of 5', { from, to: plus(DAY), duration: 7 }, '/duration'],
    ['no center', { codalmacen: undefined, from, to: plus(DAY) }, '/codalmacen'],
    ['no from', { to: plus(DAY) }, '/from'],
    ['no to', { from }, '/to'],
  ])('availability: %s', async (_case, q, path) => {
    const c = companyOf(h)
    const res = await c.send('GET', availabilityUrl({ codalmacen: 'ALM1', ...q }))
    expect(res.statusCode).toBe(400)
    expect(res.json().code).toBe('validation_failed')
    expect(res.json().errors.map((e: { path: string }) => e.path)).toContain(path)
  })

  test('availability: exactly 31 days is fine', async () => {
    const c = companyOf(h)
    const res = await c.send('GET', availabilityUrl({ codalmacen: 'ALM1', from, to: plus(31 * DAY) }))
    expect(res.statusCode).toBe(200)
    expect(res.json()).toEqual({ data: [] })
  })

  const hours = (...h: Array<[number, string, string]>) =>
    h.map(([weekday, start, end]) => ({ codalmacen: 'ALM1', weekday, start, end }))
  test.each([
    ['an unknown time zone', { time_zone: 'Mars/Olympus_Mons' }, /^\/time_zone$/],
    [
      'overlapping hours',
      { working_hours: hours([1, '09:00', '14:00'], [1, '13:00', '15:00']) },
      /^\/working_hours\/[01](\/|$)/,
    ],
    [
      'overlapping hours at two centers',
      {
        working_hours: [
          { codalmacen: 'ALM1', weekday: 2, start: '09:00', end: '14:00' },
          { codalmacen: 'ALM2', weekday: 2, start: '10:00', end: '11:00' },
        ],
      },
      /^\/working_hours\/[01](\/|$)/,
    ],
    [
      'hours ending before they start',
      { working_hours: hours([1, '14:00', '09:00']) },
      /^\/working_hours\/0(\/|$)/,
    ],
    [
      'hours ending as they start',
      { working_hours: hours([1, '09:00', '09:00']) },
      /^\/working_hours\/0(\/|$)/,
    ],
    ['weekday 0', { working_hours: hours([0, '09:00', '14:00']) }, /^\/working_hours\/0\/weekday$/],
    ['weekday 8', { working_hours: hours([8, '09:00', '14:00']) }, /^\/working_hours\/0\/weekday$/],
    ['a time that is no time', { working_hours: hours([1, '09:00', '24:30']) }, /^\/working_hours\/0\/end$/],
    ['slot_minutes 7', { slot_minutes: 7 }, /^\/slot_minutes$/],
    ['slot_minutes 0', { slot_minutes: 0 }, /^\/slot_minutes$/],
    ['an id that is not a slug', { id: 'Dra Lopez' }, /^\/id$/],
  ])('practitioner: %s', async (_case, body, path) => {
    const c = companyOf(h)
    const res = await c.send('POST', '/practitioners', { id: 'dra-mal', name: 'Dra. Ficticia', ...body })
    expect(res.statusCode).toBe(400)
    expect(res.json().code).toBe('validation_failed')
    const paths: string[] = res.json().errors.map((e: { path: string }) => e.path)
    expect(paths.some((p) => path.test(p))).toBe(true)
    expect((await c.send('GET', '/practitioners/dra-mal')).statusCode).toBe(404)
  })

  test('adjacent hours and 24:00 are fine; a PATCH with overlapping hours is 400 and changes nothing', async () => {
    const c = companyOf(h)
    const p = await newPractitioner(c, {
      working_hours: hours([1, '09:00', '12:00'], [1, '12:00', '14:00'], [5, '20:00', '24:00']),
    })
    const res = await c.send('PATCH', `/practitioners/${p.id}`, {
      working_hours: hours([2, '09:00', '12:00'], [2, '11:59', '14:00']),
    })
    expect(res.statusCode).toBe(400)
    expect(
      res
        .json()
        .errors.map((e: { path: string }) => e.path)
        .join(),
    ).toMatch(/\/working_hours\/[01]/)
    expect((await c.send('GET', `/practitioners/${p.id}`)).json()).toMatchObject({ version: p.version })
  })
})
