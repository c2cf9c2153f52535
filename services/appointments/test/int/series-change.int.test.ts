import { companyOf, outboxOf, startApp, type Company, type Harness } from '../helpers'
import { localOf, manualClock } from './calendar-fixtures'

/**
 * Changing and cancelling a series (DESIGN.md section 20): this, following (a split that loses
 * and doubles nothing) and all (future occurrences that follow the plan only: never past,
 * checked-in, cancelled or changed-alone ones); conflicts roll everything back.
 */

const clock = manualClock('2026-06-01T00:00:00Z')
let h: Harness
beforeAll(async () => {
  h = await startApp({ poolMax: 6, clock: clock.now })
})
afterAll(() => h.close())
beforeEach(() => clock.set('2026-06-01T00:00:00Z'))

type Json = Record<string, any> // eslint-disable-line @typescript-eslint/no-explicit-any
let n = 0
const practitioner = () => `dr-cambio-${++n}-${Date.now().toString(36)}`
const ZONE = 'Europe/Madrid'
/** Mondays from 6 September 2027 (CEST: 10:00 is 08:00Z). */
async function seriesOf(c: Company, o: Json = {}): Promise<Json> {
  const res = await c.send('POST', '/appointments/series', {
    patient_id: c.newPatient(),
    practitioner: practitioner(),
    codalmacen: 'ALM1',
    start: '2027-09-06T10:00',
    duration_minutes: 30,
    rrule: 'FREQ=WEEKLY;COUNT=6',
    ...o,
  })
  if (res.statusCode !== 201) throw new Error(`series: ${res.statusCode} ${res.body}`)
  return res.json()
}
const local = (a: Json) => localOf(a.starts_at, ZONE).time
const byOccurrence = (s: Json) => Object.fromEntries(s.occurrences.map((a: Json) => [a.occurrence, a]))
async function patch(c: Company, s: Json, body: Json, headers: Record<string, string> = {}) {
  return c.send('PATCH', `/appointments/series/${s.id}`, body, headers)
}
async function cancel(c: Company, s: Json, body: Json) {
  return c.send('POST', `/appointments/series/${s.id}/cancel`, body)
}
const read = async (c: Company, id: string) => (await c.send('GET', `/appointments/series/${id}`)).json()

describe('PATCH scope this, then all', () => {
  test('this changes one occurrence, which all then leaves; all never touches past, checked-in or moved ones', async () => {
    const c = companyOf(h)
    const s = await seriesOf(c)
    const one = await patch(c, s, { scope: 'this', occurrence: 3, start_time: '11:30' })
    expect(one.statusCode).toBe(200)
    expect(one.headers.etag).toBe('"2"')
    const afterOne = byOccurrence(one.json())
    expect(afterOne[3]).toMatchObject({
      id: s.occurrences[2].id,
      starts_at: '2027-09-20T09:30:00.000Z',
      recurrence_id: '2027-09-20T08:00:00.000Z',
      version: 2,
    })
    expect([1, 2, 4, 5, 6].map((i) => local(afterOne[i]))).toEqual(Array(5).fill('10:00'))

    const checkedIn = await c.send('POST', `/appointments/${s.occurrences[1].id}/checkin`)
    expect(checkedIn.statusCode).toBe(200)
    const moved = await c.send('PATCH', `/appointments/${s.occurrences[4].id}`, {
      starts_at: '2027-10-04T13:00:00+02:00',
      ends_at: '2027-10-04T13:30:00+02:00',
    })
    expect(moved.statusCode).toBe(200)
    clock.set('2027-09-06T09:00:00Z') // occurrence 1 has started

    const all = await patch(c, s, {
      scope: 'all',
      start_time: '12:00',
      duration_minutes: 45,
      notes: 'sala 2',
    })
    expect(all.statusCode).toBe(200)
    const after = byOccurrence(all.json())
    expect(all.json()).toMatchObject({
      start: '2027-09-06T12:00',
      duration_minutes: 45,
      notes: 'sala 2',
      version: 3,
    })
    expect([1, 2, 3, 5].map((i) => [local(after[i]), after[i].notes])).toEqual([
      ['10:00', null], // past
      ['10:00', null], // checked in
      ['11:30', null], // changed on its own
      ['13:00', null], // moved by a plain PATCH
    ])
    for (const i of [4, 6]) {
      expect(after[i]).toMatchObject({ notes: 'sala 2', recurrence_id: after[i].starts_at })
      expect(local(after[i])).toBe('12:00')
      expect(Date.parse(after[i].ends_at) - Date.parse(after[i].starts_at)).toBe(45 * 60_000)
    }
    const events = await outboxOf(h.owner, c.principal.companyId, s.id)
    expect(events.map((e) => [e.type, e.payload.data.scope ?? null, e.payload.data.changes ?? null])).toEqual(
      [
        ['appointment.series.created', null, null],
        ['appointment.series.updated', 'this', ['start_time']],
        ['appointment.series.updated', 'all', ['start_time', 'duration_minutes', 'notes']],
      ],
    )
    const sixth = await outboxOf(h.owner, c.principal.companyId, s.occurrences[5].id)
    expect(sixth.map((e) => e.type)).toEqual(['appointment.created', 'appointment.updated'])
    expect(sixth[1]!.payload.data.changes).toEqual(['starts_at', 'ends_at', 'recurrence_id', 'notes'])
  })

  test('a stale If-Match is 412; a change onto taken time is 409 series_conflict and nothing changes', async () => {
    const c = companyOf(h)
    const s = await seriesOf(c)
    const p = s.practitioner
    await c.book({ practitioner: p, starts_at: '2027-09-20T10:00:00Z', ends_at: '2027-09-20T10:30:00Z' })
    const stale = await patch(c, s, { scope: 'all', notes: 'x' }, { 'if-match': '"7"' })
    expect(stale.statusCode).toBe(412)
    for (const body of [
      { scope: 'all', start_time: '12:00' },
      { scope: 'following', occurrence: 2, start_time: '12:00' },
      { scope: 'this', occurrence: 3, start_time: '12:15' },
    ]) {
      const res = await patch(c, s, body)
      expect(res.statusCode).toBe(409)
      expect(res.json()).toMatchObject({
        code: 'series_conflict',
        detail: expect.stringContaining('nothing was changed'),
      })
      expect(res.json().conflicts).toEqual([
        {
          occurrence: 3,
          starts_at: expect.stringMatching(/^2027-09-20T10:/),
          reason: 'practitioner_busy',
          alternatives: [],
        },
      ])
    }
    expect(await read(c, s.id)).toEqual(s)
    expect(await h.owner('series').where({ idempresa: c.principal.companyId })).toHaveLength(1)
    expect((await outboxOf(h.owner, c.principal.companyId, s.id)).map((e) => e.type)).toEqual([
      'appointment.series.created',
    ])
  })

  test('400s: occurrence with the scopes that need it, something to change, unknown occurrences', async () => {
    const c = companyOf(h)
    const s = await seriesOf(c)
    const cases: Array<[Json, string]> = [
      [{ scope: 'this', notes: 'x' }, '/occurrence'],
      [{ scope: 'all', occurrence: 2, notes: 'x' }, '/occurrence'],
      [{ scope: 'all' }, ''],
      [{ scope: 'this', occurrence: 9, notes: 'x' }, '/occurrence'],
      [{ scope: 'following', occurrence: 9, notes: 'x' }, '/occurrence'],
      [{ scope: 'some', notes: 'x' }, '/scope'],
      [{ scope: 'all', start_time: '25:00' }, '/start_time'],
    ]
    for (const [body, path] of cases) {
      const res = await patch(c, s, body)
      expect([res.statusCode, res.json().errors?.[0]?.path]).toEqual([400, path])
    }
  })
})

describe('PATCH scope following: a split', () => {
  test('ends the series before the occurrence and moves the rest, changed, to a new one: nothing lost or doubled', async () => {
    const c = companyOf(h)
    const p = practitioner()
    // The 7th Monday is taken: allow_partial skips it. 4 October is excluded.
    await c.book({ practitioner: p, starts_at: '2027-10-25T08:00:00Z', ends_at: '2027-10-25T08:30:00Z' })
    const s = await seriesOf(c, {
      practitioner: p,
      rrule: 'FREQ=WEEKLY;COUNT=10',
      exdates: ['2027-10-04'],
      allow_partial: true,
    })
    expect(s.occurrences.map((a: Json) => a.occurrence)).toEqual([1, 2, 3, 4, 5, 6, 8, 9])
    expect(s.skipped.map((x: Json) => x.occurrence)).toEqual([7])
    await patch(c, s, { scope: 'this', occurrence: 6, start_time: '11:00' })

    const res = await patch(c, s, { scope: 'following', occurrence: 4, start_time: '12:00' })
    expect(res.statusCode).toBe(200)
    const next = res.json()
    expect(next).toMatchObject({
      previous_series_id: s.id,
      next_series_id: null,
      status: 'active',
      start: '2027-09-27T12:00',
      rrule: 'FREQ=WEEKLY;COUNT=7',
      exdates: ['2027-10-04'],
      skipped: [{ occurrence: 4, starts_at: '2027-10-25T08:00:00.000Z', reason: 'practitioner_busy' }],
      version: 1,
    })
    const old = await read(c, s.id)
    expect(old).toMatchObject({
      status: 'ended',
      next_series_id: next.id,
      rrule: 'FREQ=WEEKLY;COUNT=3',
      exdates: [],
      skipped: [],
    })
    expect(old.occurrences.map((a: Json) => [a.occurrence, a.id, local(a)])).toEqual(
      s.occurrences.slice(0, 3).map((a: Json) => [a.occurrence, a.id, '10:00']),
    )
    // The same appointments, renumbered from 1; the one changed alone keeps its time.
    expect(next.occurrences.map((a: Json) => [a.occurrence, a.id, local(a)])).toEqual([
      [1, s.occurrences[3].id, '12:00'],
      [2, s.occurrences[4].id, '12:00'],
      [3, s.occurrences[5].id, '11:00'],
      [5, s.occurrences[6].id, '12:00'],
      [6, s.occurrences[7].id, '12:00'],
    ])
    for (const a of next.occurrences) expect(a.series_id).toBe(next.id)
    expect(next.occurrences[0].recurrence_id).toBe('2027-09-27T10:00:00.000Z')

    const ids = [...old.occurrences, ...next.occurrences].map((a: Json) => a.id)
    expect(new Set(ids).size).toBe(8)
    expect([...ids].sort()).toEqual(s.occurrences.map((a: Json) => a.id).sort())
    const rows = await h
      .owner('appointments')
      .where({ idempresa: c.principal.companyId })
      .whereNotNull('series_id')
    expect(rows).toHaveLength(8)
    const total = async (id: string) =>
      (await c.send('GET', `/appointments?series_id=${id}`)).json().meta.total
    expect([await total(s.id), await total(next.id)]).toEqual([3, 5])

    const oldEvents = await outboxOf(h.owner, c.principal.companyId, s.id)
    expect(oldEvents.at(-1)!.payload.data).toMatchObject({
      status: 'ended',
      scope: 'following',
      occurrences: 3,
    })
    const newEvents = await outboxOf(h.owner, c.principal.companyId, next.id)
    expect(
      newEvents.map((e) => [e.type, e.payload.data.previous_series_id, e.payload.data.occurrences]),
    ).toEqual([['appointment.series.created', s.id, 5]])
    const moved = await outboxOf(h.owner, c.principal.companyId, s.occurrences[3].id)
    expect(moved.at(-1)!.payload.data.changes).toEqual([
      'series_id',
      'occurrence',
      'recurrence_id',
      'starts_at',
      'ends_at',
    ])

    // The ended series is not split again; the new one is a series like any other: all re-plans it
    // (and leaves the changed one).
    const twice = await patch(c, s, { scope: 'following', occurrence: 2, notes: 'x' })
    expect([twice.statusCode, twice.json().code]).toEqual([409, 'invalid_transition'])
    const again = await patch(c, next, { scope: 'all', start_time: '09:00' })
    expect(again.json().occurrences.map(local)).toEqual(['09:00', '09:00', '11:00', '09:00', '09:00'])
  })

  test('an UNTIL rule is cut by UNTIL; following from the first occurrence is all', async () => {
    const c = companyOf(h)
    const s = await seriesOf(c, { rrule: 'FREQ=WEEKLY;UNTIL=20271011' })
    expect(s.occurrences).toHaveLength(6)
    const next = (await patch(c, s, { scope: 'following', occurrence: 3, duration_minutes: 60 })).json()
    expect(next.rrule).toBe('FREQ=WEEKLY;UNTIL=20271011T235959')
    expect(next.occurrences).toHaveLength(4)
    expect((await read(c, s.id)).rrule).toBe('FREQ=WEEKLY;UNTIL=20270913T235959')
    const whole = (await patch(c, next, { scope: 'following', occurrence: 1, notes: 'todas' })).json()
    expect(whole.id).toBe(next.id)
    expect(whole.occurrences.map((a: Json) => a.notes)).toEqual(Array(4).fill('todas'))
  })
})

describe('POST /appointments/series/{id}/cancel', () => {
  test('this, following, all: each cancels scheduled occurrences yet to start, with the reason', async () => {
    const c = companyOf(h)
    const s = await seriesOf(c)
    const one = await cancel(c, s, { scope: 'this', occurrence: 2, reason: 'viaje' })
    expect(one.statusCode).toBe(200)
    expect(byOccurrence(one.json())[2]).toMatchObject({ status: 'cancelled', cancellation_reason: 'viaje' })
    expect(one.json().status).toBe('active')
    // Its time is free again.
    const freed = s.occurrences[1]
    await c.book({ practitioner: s.practitioner, starts_at: freed.starts_at, ends_at: freed.ends_at })
    const twice = await cancel(c, s, { scope: 'this', occurrence: 2, reason: 'viaje' })
    expect([twice.statusCode, twice.json().code]).toEqual([409, 'invalid_transition'])

    const following = (await cancel(c, s, { scope: 'following', occurrence: 5, reason: 'alta' })).json()
    expect(following.status).toBe('ended')
    expect(following.occurrences.map((a: Json) => a.status)).toEqual([
      'scheduled',
      'cancelled',
      'scheduled',
      'scheduled',
      'cancelled',
      'cancelled',
    ])
    clock.set('2027-09-06T09:00:00Z') // occurrence 1 has started: all leaves it
    const all = (await cancel(c, s, { scope: 'all', reason: 'alta medica' })).json()
    expect(all.status).toBe('cancelled')
    expect(all.occurrences.map((a: Json) => [a.status, a.cancellation_reason])).toEqual([
      ['scheduled', null],
      ['cancelled', 'viaje'],
      ['cancelled', 'alta medica'],
      ['cancelled', 'alta medica'],
      ['cancelled', 'alta'],
      ['cancelled', 'alta'],
    ])
    const events = await outboxOf(h.owner, c.principal.companyId, s.id)
    expect(
      events
        .slice(1)
        .map((e) => [e.type, e.payload.data.scope, e.payload.data.cancelled, e.payload.data.status]),
    ).toEqual([
      ['appointment.series.cancelled', 'this', 1, 'active'],
      ['appointment.series.cancelled', 'following', 2, 'ended'],
      ['appointment.series.cancelled', 'all', 2, 'cancelled'],
    ])
    const afterwards = await patch(c, s, { scope: 'all', notes: 'x' })
    expect([afterwards.statusCode, afterwards.json().code]).toEqual([409, 'invalid_transition'])
  })

  test('reason is required; occurrence with this and following', async () => {
    const c = companyOf(h)
    const s = await seriesOf(c)
    const noReason = await cancel(c, s, { scope: 'all' })
    expect(noReason.json().errors).toEqual([{ path: '/reason', message: expect.any(String) }])
    const noOccurrence = await cancel(c, s, { scope: 'following', reason: 'x' })
    expect(noOccurrence.json().errors).toEqual([
      { path: '/occurrence', message: 'is required with scope following' },
    ])
    expect((await read(c, s.id)).version).toBe(1)
  })
})
