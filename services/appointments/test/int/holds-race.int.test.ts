import { waitFor } from '@clinic/platform/testing'
import { conflictQuery, purgeQuery } from '../../src/db/repositories/calendar-sql'
import { companyOf, startApp, type Company, type Harness } from '../helpers'
import {
  availability,
  everyDay,
  iso,
  manualClock,
  newPractitioner,
  practitionerLockKey,
  remove,
  waitersOn,
  zoned,
} from './calendar-fixtures'

/**
 * Holds (DESIGN.md section 11): a live hold blocks a slot exactly like an appointment,
 * decided by the database under concurrency; an expired hold blocks nothing, even before anything
 * removed it; a hold becomes an appointment only for its own company and centers. The app's clock
 * is moved by the tests, never waited for.
 */

const TTL_SECONDS = 120
const ZONE = 'Europe/Madrid'
const clock = manualClock('2031-01-01T00:00:00Z')
let h: Harness
beforeAll(async () => {
  // Room for the 20 racing requests: each waits on the calendar's lock with a connection.
  h = await startApp({ poolMax: 12, clock: clock.now, holdTtlSeconds: TTL_SECONDS })
})
afterAll(() => h.close())
beforeEach(() => clock.set('2031-01-01T00:00:00Z'))

/** A registered practitioner working 08:00-20:00 local every day at ALM1. */
async function setUp(c: Company) {
  return (await newPractitioner(c, { time_zone: ZONE, working_hours: everyDay('08:00', '20:00') })).id
}

/** A 20-minute slot of `practitioner` on 13 January 2031 (a Monday), at local `time`. */
function slotAt(practitioner: string, time: string, codalmacen = 'ALM1') {
  const start = zoned('2031-01-13', time, ZONE)
  return { practitioner, codalmacen, starts_at: iso(start), ends_at: iso(start + 20 * 60_000) }
}
type SlotBody = ReturnType<typeof slotAt>

const hold = (c: Company, s: SlotBody, extra: Record<string, unknown> = {}) =>
  c.send('POST', '/appointments/holds', { ...s, ...extra })
const book = (c: Company, s: SlotBody, extra: Record<string, unknown> = {}) =>
  c.send('POST', '/appointments', {
    ...s,
    patient_id: c.newPatient(),
    reason: 'revision de prueba',
    ...extra,
  })

/** The live claims (appointments and unexpired holds) of the practitioner that overlap the slot. */
async function claims(c: Company, s: SlotBody) {
  return h
    .owner('calendar')
    .where({ idempresa: c.principal.companyId, practitioner: s.practitioner })
    .whereRaw('during && tstzrange(CAST(? AS timestamptz), CAST(? AS timestamptz))', [s.starts_at, s.ends_at])
    .where((w) => w.whereNull('expires_at').orWhere('expires_at', '>', clock.now()))
    .select('kind')
}

/** Whether the slot is offered by availability. */
async function offered(c: Company, s: SlotBody) {
  const data = await availability(c, {
    from: s.starts_at,
    to: s.ends_at,
    practitioner: [s.practitioner],
    codalmacen: s.codalmacen,
  })
  return data.some((x) => x.starts_at === new Date(s.starts_at).toISOString())
}

describe('a race on one slot', () => {
  test('20 concurrent holds and bookings: exactly one wins, the others are 409 slot_conflict; ten times', async () => {
    const c = companyOf(h)
    const practitioner = await setUp(c)
    for (let round = 0; round < 10; round++) {
      const s = slotAt(practitioner, `${String(9 + round).padStart(2, '0')}:20`)
      const answers = await Promise.all(
        Array.from({ length: 20 }, (_, i) => {
          if (i % 2 === 1) return book(c, s)
          // Holds with and without a patient.
          return hold(c, s, i % 4 === 0 ? { patient_id: c.newPatient() } : {})
        }),
      )
      const statuses = answers.map((r) => r.statusCode)
      const won = answers.filter((r) => r.statusCode === 201)
      expect({ round, won: won.length }).toEqual({ round, won: 1 })
      const lost = answers.filter((r) => r.statusCode !== 201)
      expect({ round, statuses: statuses.filter((x) => x !== 201) }).toEqual({
        round,
        statuses: Array(19).fill(409),
      })
      for (const r of lost) {
        expect(r.json()).toMatchObject({ code: 'slot_conflict' })
        // What it offers instead is never the slot it lost.
        const offeredInstead: Array<{ starts_at: string }> = r.json().alternatives
        expect(offeredInstead.length).toBeGreaterThan(0)
        expect(offeredInstead.map((a) => a.starts_at)).not.toContain(s.starts_at)
      }
      // The database holds exactly the winner, and availability no longer offers the slot.
      expect(await claims(c, s)).toHaveLength(1)
      expect(await offered(c, s)).toBe(false)
    }
  })

  test('converting a hold while 19 others race for its slot: the holder gets it, the others 409; ten times', async () => {
    const c = companyOf(h)
    const practitioner = await setUp(c)
    for (let round = 0; round < 10; round++) {
      const s = slotAt(practitioner, `${String(9 + round).padStart(2, '0')}:40`)
      const held = await hold(c, s)
      expect(held.statusCode).toBe(201)
      const answers = await Promise.all(
        Array.from({ length: 20 }, (_, i) => {
          if (i === 10) return book(c, s, { hold_id: held.json().id })
          return i % 2 ? book(c, s) : hold(c, s)
        }),
      )
      const conversion = answers[10]!
      expect({ round, status: conversion.statusCode, body: conversion.json() }).toMatchObject({
        round,
        status: 201,
      })
      const others = answers.filter((_, i) => i !== 10)
      expect({ round, statuses: others.map((r) => `${r.statusCode} ${r.json().code}`) }).toEqual({
        round,
        statuses: Array(19).fill('409 slot_conflict'),
      })
      expect(await claims(c, s)).toEqual([{ kind: 'appointment' }])
    }
  })

  test('a hold expiring while a booking of its slot waits for the calendar: the booking wins', async () => {
    const c = companyOf(h)
    const practitioner = await setUp(c)
    const s = slotAt(practitioner, '10:00')
    const held = await hold(c, s)
    expect(held.statusCode).toBe(201)
    const { expires_at } = held.json()
    // While the hold is live, the slot is taken.
    expect((await book(c, s)).statusCode).toBe(409)

    const key = practitionerLockKey(c.principal.companyId, practitioner)
    const trx = await h.owner.transaction()
    try {
      await trx.raw('SELECT pg_advisory_xact_lock(hashtextextended(?, 0))', [key])
      let settled = false
      const booking = book(c, s).finally(() => {
        settled = true
      })
      // The booking is inside its transaction, waiting for the practitioner's calendar.
      await waitFor(async () => settled || (await waitersOn(h, key)) > 0, {
        timeoutMs: 30_000,
        what: 'the booking to wait for the practitioner lock',
      })
      expect(settled).toBe(false)
      clock.set(Date.parse(expires_at) + 1000)
      await trx.commit()
      const res = await booking
      expect(res.statusCode).toBe(201)
      expect(res.json()).toMatchObject({ starts_at: s.starts_at, ends_at: s.ends_at, status: 'scheduled' })
    } finally {
      if (!trx.isCompleted()) await trx.rollback()
    }
    expect(await claims(c, s)).toEqual([{ kind: 'appointment' }])
    // The expired hold is gone for its owner too.
    expect((await remove(h, c, `/appointments/holds/${held.json().id}`)).statusCode).toBe(404)
  })
})

describe('holds', () => {
  test('201 with Location, expiry now + HOLD_TTL_SECONDS by the injected clock; it blocks the slot', async () => {
    const c = companyOf(h)
    const practitioner = await setUp(c)
    const s = slotAt(practitioner, '11:00')
    clock.set('2031-01-02T10:00:00Z')
    const res = await hold(c, s)
    expect(res.statusCode).toBe(201)
    const body = res.json()
    expect(body).toEqual({
      id: expect.stringMatching(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/),
      ...s,
      patient_id: null,
      expires_at: iso(Date.parse('2031-01-02T10:00:00Z') + TTL_SECONDS * 1000),
      created_at: expect.stringMatching(/Z$/),
    })
    expect(res.headers.location).toBe(`/appointments/holds/${body.id}`)
    expect(await offered(c, s)).toBe(false)
    const other = await book(c, s)
    expect(other.statusCode).toBe(409)
    expect(other.json().code).toBe('slot_conflict')
    // An overlapping hold too, even one that only shares ten minutes.
    const start = Date.parse(s.starts_at) + 10 * 60_000
    const overlapping = await hold(c, { ...s, starts_at: iso(start), ends_at: iso(start + 20 * 60_000) })
    expect(overlapping.statusCode).toBe(409)
    // It offers the next free 20-minute slots from its start instead.
    expect(overlapping.json().alternatives).toEqual(
      await availability(c, { from: iso(start), to: iso(start + 86_400_000), limit: 3 }),
    )
    expect(overlapping.json().alternatives.map((a: { starts_at: string }) => a.starts_at)).toEqual(
      ['11:20', '11:40', '12:00'].map((t) => slotAt(practitioner, t).starts_at),
    )
    // The slots next to it are free: ranges are half-open.
    expect((await hold(c, slotAt(practitioner, '11:20'))).statusCode).toBe(201)
    expect((await hold(c, slotAt(practitioner, '10:40'))).statusCode).toBe(201)
  })

  test('booking with hold_id turns the hold into the appointment; the hold is gone', async () => {
    const c = companyOf(h)
    const practitioner = await setUp(c)
    const s = slotAt(practitioner, '12:00')
    const patient_id = c.newPatient()
    const held = (await hold(c, s, { patient_id })).json()
    const res = await c.send('POST', '/appointments', {
      ...s,
      patient_id,
      reason: 'revision de prueba',
      hold_id: held.id,
    })
    expect(res.statusCode).toBe(201)
    expect(res.json()).toMatchObject({ ...s, patient_id, status: 'scheduled' })
    expect(await claims(c, s)).toEqual([{ kind: 'appointment' }])
    expect((await remove(h, c, `/appointments/holds/${held.id}`)).statusCode).toBe(404)
    // A second booking naming the (now gone) hold is decided by the slot: taken.
    const again = await book(c, s, { hold_id: held.id })
    expect(again.statusCode).toBe(409)
    expect(again.json().code).toBe('slot_conflict')
  })

  test('a hold_id whose slot differs from the body is 400 /hold_id, and the hold stays', async () => {
    const c = companyOf(h)
    const practitioner = await setUp(c)
    const s = slotAt(practitioner, '13:00')
    const held = (await hold(c, s)).json()
    for (const other of [
      slotAt(practitioner, '13:20'),
      { ...s, codalmacen: 'ALM2' },
      { ...s, ends_at: iso(Date.parse(s.ends_at) + 20 * 60_000) },
    ]) {
      // outside_hours: the other center is outside the hours; only the hold is at issue here.
      const res = await book(c, other, { hold_id: held.id, outside_hours: true })
      expect(res.statusCode).toBe(400)
      expect(res.json().code).toBe('validation_failed')
      expect(res.json().errors.map((e: { path: string }) => e.path)).toContain('/hold_id')
    }
    expect(await claims(c, s)).toEqual([{ kind: 'hold' }])
    expect((await book(c, s, { hold_id: held.id })).statusCode).toBe(201)
  })

  test('an unknown hold_id books as if none was named', async () => {
    const c = companyOf(h)
    const practitioner = await setUp(c)
    const res = await book(c, slotAt(practitioner, '14:00'), {
      hold_id: '01900000-0000-7000-8000-0000000000ff',
    })
    expect(res.statusCode).toBe(201)
  })

  test('another company can neither release nor convert a hold; its own calendar is separate', async () => {
    const a = companyOf(h)
    const b = companyOf(h)
    const practitioner = await setUp(a)
    const s = slotAt(practitioner, '15:00')
    const held = (await hold(a, s)).json()
    expect((await remove(h, b, `/appointments/holds/${held.id}`)).statusCode).toBe(404)
    // For b the hold does not exist: its booking of the same slug and time is decided by its own
    // calendar, where that time is free; a's hold is untouched.
    const theirs = await book(b, s, { hold_id: held.id })
    expect(theirs.statusCode).toBe(201)
    expect(await claims(a, s)).toEqual([{ kind: 'hold' }])
    expect((await book(a, s)).statusCode).toBe(409)
    expect((await book(a, s, { hold_id: held.id })).statusCode).toBe(201)
  })

  test('a token limited to other centers can neither release nor convert a hold, nor learn of it', async () => {
    const c = companyOf(h)
    const practitioner = await setUp(c)
    const s = slotAt(practitioner, '16:00')
    const held = (await hold(c, s)).json()
    const alm2 = companyOf(h, { companyId: c.principal.companyId, allowedCenters: ['ALM2'] })
    expect((await remove(h, alm2, `/appointments/holds/${held.id}`)).statusCode).toBe(404)
    const atAlm1 = await book(alm2, s, { hold_id: held.id })
    expect(atAlm1.statusCode).toBe(403)
    expect(atAlm1.json().code).toBe('center_forbidden')
    // The same practitioner and time at its own center: taken, by something it may not see.
    const atAlm2 = await book(alm2, { ...s, codalmacen: 'ALM2' }, { hold_id: held.id, outside_hours: true })
    expect(atAlm2.statusCode).toBe(409)
    expect(atAlm2.json().code).toBe('slot_conflict')
    expect(atAlm2.json().detail).not.toMatch(/patient|practitioner|hold/i)
    expect(await claims(c, s)).toEqual([{ kind: 'hold' }])
    expect((await remove(h, c, `/appointments/holds/${held.id}`)).statusCode).toBe(204)
  })

  test('?codalmacen= of another center: a token of every center cannot release the hold either (404)', async () => {
    const c = companyOf(h)
    const practitioner = await setUp(c)
    const s = slotAt(practitioner, '17:00')
    const held = (await hold(c, s)).json()
    const other = await remove(h, c, `/appointments/holds/${held.id}?codalmacen=ALM2`)
    expect([other.statusCode, other.json().code]).toEqual([404, 'not_found'])
    expect(await claims(c, s)).toEqual([{ kind: 'hold' }])
    const unknown = await remove(h, c, `/appointments/holds/${held.id}?codalmacen=NOPE`)
    expect([unknown.statusCode, unknown.json().code]).toEqual([400, 'unknown_center'])
    expect((await remove(h, c, `/appointments/holds/${held.id}?codalmacen=ALM1`)).statusCode).toBe(204)
    expect(await claims(c, s)).toEqual([])
  })

  test('an expired hold blocks nothing, with no sweeper: others book and hold its slot', async () => {
    const c = companyOf(h)
    const practitioner = await setUp(c)
    const s = slotAt(practitioner, '17:00')
    const held = (await hold(c, s)).json()
    expect(await offered(c, s)).toBe(false)
    clock.set(Date.parse(held.expires_at) - 1000)
    expect(await offered(c, s)).toBe(false)
    expect((await book(c, s)).statusCode).toBe(409)
    clock.set(Date.parse(held.expires_at) + 1000)
    expect(await offered(c, s)).toBe(true)
    expect((await remove(h, c, `/appointments/holds/${held.id}`)).statusCode).toBe(404)
    const again = await hold(c, s)
    expect(again.statusCode).toBe(201)
    expect((await remove(h, c, `/appointments/holds/${again.json().id}`)).statusCode).toBe(204)
    // Another expired hold, then a booking by another patient, without anything in between.
    const second = (await hold(c, s)).json()
    clock.set(Date.parse(second.expires_at) + 1000)
    const res = await book(c, s)
    expect(res.statusCode).toBe(201)
    expect(await claims(c, s)).toEqual([{ kind: 'appointment' }])
  })

  test('a move onto a live hold is 409; onto an expired one, or naming an expired hold_id, it goes through', async () => {
    const c = companyOf(h)
    const practitioner = await setUp(c)
    const s = slotAt(practitioner, '19:00')
    const mine = (await book(c, slotAt(practitioner, '19:20'))).json()
    const held = (await hold(c, s)).json()
    const move = () =>
      c.send('PATCH', `/appointments/${mine.id}`, { starts_at: s.starts_at, ends_at: s.ends_at })
    const refused = await move()
    expect(refused.statusCode).toBe(409)
    expect(refused.json().code).toBe('slot_conflict')
    clock.set(Date.parse(held.expires_at) + 1000)
    const moved = await move()
    expect(moved.statusCode).toBe(200)
    expect(moved.json()).toMatchObject({ starts_at: s.starts_at, ends_at: s.ends_at })
    // The slot it left: held, let expire, then booked naming that expired hold.
    const left = slotAt(practitioner, '19:20')
    const second = (await hold(c, left)).json()
    clock.set(Date.parse(second.expires_at) + 1000)
    expect((await book(c, left, { hold_id: second.id })).statusCode).toBe(201)
    expect(await claims(c, left)).toEqual([{ kind: 'appointment' }])
  })

  test('DELETE releases a live hold (204), then 404; the slot is free again', async () => {
    const c = companyOf(h)
    const practitioner = await setUp(c)
    const s = slotAt(practitioner, '18:00')
    const held = (await hold(c, s)).json()
    expect((await book(c, s)).statusCode).toBe(409)
    const res = await remove(h, c, `/appointments/holds/${held.id}`)
    expect(res.statusCode).toBe(204)
    expect(res.body).toBe('')
    expect((await remove(h, c, `/appointments/holds/${held.id}`)).statusCode).toBe(404)
    expect((await remove(h, c, '/appointments/holds/01900000-0000-7000-8000-0000000000fe')).statusCode).toBe(
      404,
    )
    expect(await offered(c, s)).toBe(true)
    expect((await book(c, s)).statusCode).toBe(201)
  })

  test('claims of 12 h (the longest) ending minutes into a slot: an expired hold is cleared for it; a live one is a conflict found at its center', async () => {
    const c = companyOf(h)
    const [first, second, third] = [await setUp(c), await setUp(c), await setUp(c)]
    // The claims' own statements look for claims by their start, at most 12 h before the slot:
    // these start 11 h 55 min before it (at ALM2, outside the practitioners' hours).
    const s = slotAt(first, '09:00')
    const end = Date.parse(s.starts_at) + 5 * 60_000
    const long = { codalmacen: 'ALM2', starts_at: iso(end - 12 * 3600_000), ends_at: iso(end) }
    await h.owner('calendar').insert({
      idempresa: c.principal.companyId,
      id: crypto.randomUUID(),
      kind: 'hold',
      practitioner: first,
      codalmacen: long.codalmacen,
      during: h.owner.raw('tstzrange(CAST(? AS timestamptz), CAST(? AS timestamptz))', [
        long.starts_at,
        long.ends_at,
      ]),
      expires_at: new Date(clock.now().getTime() - 1000),
    })
    // A booking takes no other expired hold away (a new hold sweeps some): this one went because
    // it overlaps the slot.
    expect((await book(c, s)).statusCode).toBe(201)
    expect(await claims(c, s)).toEqual([{ kind: 'appointment' }])

    const patient = c.newPatient()
    const live = await book(
      c,
      { ...slotAt(second, '09:00'), ...long },
      { patient_id: patient, outside_hours: true },
    )
    expect(live.statusCode).toBe(201)
    // A token limited to centers is told who holds the time only when it sees where: the
    // statements must find the long claim's center (none found reads as hidden).
    const limited = companyOf(h, { companyId: c.principal.companyId, allowedCenters: ['ALM1', 'ALM2'] })
    const held = await hold(limited, slotAt(second, '09:00'))
    expect([held.statusCode, held.json().detail]).toEqual([
      409,
      'The practitioner already has an overlapping appointment or hold',
    ])
    const twice = await book(limited, slotAt(third, '09:00'), { patient_id: patient })
    expect([twice.statusCode, twice.json().detail]).toEqual([
      409,
      'The patient already has an overlapping appointment',
    ])
  })

  test('a new hold sweeps the company’s expired holds away (no timer), never another company’s', async () => {
    const c = companyOf(h)
    const other = companyOf(h)
    const [p1, p2, q] = [await setUp(c), await setUp(c), await setUp(other)]
    const expired = [await hold(c, slotAt(p1, '09:00')), await hold(c, slotAt(p2, '10:00'))]
    const othersHold = await hold(other, slotAt(q, '09:00'))
    for (const res of [...expired, othersHold]) expect(res.statusCode).toBe(201)
    const holdsOf = async (company: Company) =>
      (await h.owner('calendar').where({ idempresa: company.principal.companyId, kind: 'hold' }).select('id'))
        .map((r: { id: string }) => r.id)
        .sort()
    clock.advance((TTL_SECONDS + 1) * 1000)
    // A hold of another practitioner, at another time: it overlaps neither expired hold.
    const fresh = (await hold(c, slotAt(p1, '15:00'))).json()
    expect(await holdsOf(c)).toEqual([fresh.id])
    expect(await holdsOf(other)).toEqual([othersHold.json().id])
  })
})

describe('query plans', () => {
  test("a claim's statements read the practitioner's calendar near its time, under row-level security", async () => {
    const c = companyOf(h)
    const company = c.principal.companyId
    // Two years of one practitioner's days (8 claims and an expired hold a day), then fresh statistics.
    await h.owner.raw(
      `insert into calendar (idempresa, id, kind, practitioner, codalmacen, during, expires_at)
       select ?, gen_random_uuid(), s.kind, 'dr-plan', 'ALM1', tstzrange(s.t, s.t + interval '30 minutes'),
              case when s.kind = 'hold' then timestamptz '2030-01-01Z' end
         from generate_series(0, 729) d, generate_series(0, 8) i,
              lateral (select timestamptz '2032-01-01 08:00Z' + d * interval '1 day' + i * interval '1 hour' as t,
                              case when i = 8 then 'hold' else 'appointment' end as kind) s`,
      [company],
    )
    await h.owner.raw('analyze calendar')
    const near = {
      practitioner: 'dr-plan',
      starts_at: '2033-03-01T10:00:00.000Z',
      ends_at: '2033-03-01T10:30:00.000Z',
      now: clock.now(),
    }
    for (const q of [
      purgeQuery(h.knex, company, near),
      conflictQuery(h.knex, company, { ...near, holder: 'practitioner' }),
    ]) {
      const { sql, bindings } = q.toSQL()
      const plan = await h.knex.transaction(async (trx) => {
        await trx.raw(`select set_config('app.idempresa', ?, true)`, [String(company)])
        const { rows } = await trx.raw(`explain ${sql}`, bindings)
        return rows.map((r: { 'QUERY PLAN': string }) => r['QUERY PLAN']).join('\n')
      })
      // Not every claim of the practitioner (calendar_overlap's prefix), nor a sequential scan.
      expect(plan).toMatch(/Index Scan using calendar_by_practitioner/)
      expect(plan).toMatch(/Index Cond: .*practitioner.*starts_at > .*starts_at < /)
      expect(plan).not.toMatch(/Seq Scan/)
    }
  })
})
