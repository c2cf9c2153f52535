import { companyOf, outboxOf, startApp, type Company, type Harness } from '../helpers'
import { everyDay, localOf, manualClock, newPractitioner } from './calendar-fixtures'

/**
 * Recurring series (DESIGN.md section 20), booking: the rule expanded in the series' zone with the
 * wall time kept across daylight-saving changes (the instants asserted from published zone facts,
 * not recomputed), all or nothing with every conflict listed, allow_partial, bad rules, the limits,
 * idempotency and tenant isolation.
 */

const clock = manualClock('2026-06-01T00:00:00Z')
let h: Harness
beforeAll(async () => {
  h = await startApp({ poolMax: 6, clock: clock.now })
})
afterAll(() => h.close())

type Json = Record<string, any> // eslint-disable-line @typescript-eslint/no-explicit-any
let practitioners = 0
/** A practitioner with no record (free text): the series' zone is the body's. */
const freeText = () => `dr-serie-${++practitioners}-${Date.now().toString(36)}`

const seriesBody = (c: Company, o: Json = {}): Json => ({
  patient_id: c.newPatient(),
  practitioner: freeText(),
  codalmacen: 'ALM1',
  start: '2027-03-22T09:30',
  duration_minutes: 30,
  rrule: 'FREQ=WEEKLY;COUNT=4',
  ...o,
})
async function book(c: Company, body: Json): Promise<Json> {
  const res = await c.send('POST', '/appointments/series', body)
  if (res.statusCode !== 201) throw new Error(`series: ${res.statusCode} ${res.body}`)
  return res.json()
}
const startsOf = (s: Json) => s.occurrences.map((a: Json) => a.starts_at)

describe('expansion in the zone, the wall time kept across daylight-saving changes', () => {
  // Europe/Madrid: CET (UTC+1) and CEST (UTC+2); 2027's changes are at 01:00 UTC on Sunday 28
  // March (last Sunday of March) and Sunday 31 October (last Sunday of October).
  test('Europe/Madrid, daily 09:30 on both sides of each change', async () => {
    const c = companyOf(h)
    const spring = await book(
      c,
      seriesBody(c, { start: '2027-03-26T09:30', rrule: 'FREQ=DAILY;COUNT=5', time_zone: 'Europe/Madrid' }),
    )
    expect(startsOf(spring)).toEqual([
      '2027-03-26T08:30:00.000Z',
      '2027-03-27T08:30:00.000Z',
      '2027-03-28T07:30:00.000Z',
      '2027-03-29T07:30:00.000Z',
      '2027-03-30T07:30:00.000Z',
    ])
    const autumn = await book(c, seriesBody(c, { start: '2027-10-29T09:30', rrule: 'FREQ=DAILY;COUNT=5' }))
    expect(autumn.time_zone).toBe('Europe/Madrid')
    expect(startsOf(autumn)).toEqual([
      '2027-10-29T07:30:00.000Z',
      '2027-10-30T07:30:00.000Z',
      '2027-10-31T08:30:00.000Z',
      '2027-11-01T08:30:00.000Z',
      '2027-11-02T08:30:00.000Z',
    ])
    for (const a of [...spring.occurrences, ...autumn.occurrences]) {
      expect(localOf(a.starts_at, 'Europe/Madrid').time).toBe('09:30')
      expect(Date.parse(a.ends_at) - Date.parse(a.starts_at)).toBe(30 * 60_000)
      expect(a).toMatchObject({ time_zone: 'Europe/Madrid', status: 'scheduled', recurrence_id: a.starts_at })
    }
  })

  test('Europe/Madrid, weekly on Mondays across both changes of a year', async () => {
    const c = companyOf(h)
    const s = await book(
      c,
      seriesBody(c, { start: '2027-03-22T09:30', rrule: 'FREQ=WEEKLY;BYDAY=MO;COUNT=33' }),
    )
    const starts = startsOf(s)
    expect(starts).toHaveLength(33)
    expect(starts[0]).toBe('2027-03-22T08:30:00.000Z') // CET
    expect(starts[1]).toBe('2027-03-29T07:30:00.000Z') // CEST
    expect(starts[31]).toBe('2027-10-25T07:30:00.000Z') // CEST
    expect(starts[32]).toBe('2027-11-01T08:30:00.000Z') // CET
    expect(s.occurrences.map((a: Json) => a.occurrence)).toEqual(Array.from({ length: 33 }, (_, i) => i + 1))
  })

  // Mexico abolished daylight saving time: its last change was on 30 October 2022 (02:00 CDT, UTC-5,
  // back to 01:00 CST, UTC-6); since then America/Mexico_City is UTC-6 all year.
  test('America/Mexico_City: 09:00 stays 15:00Z across the old change dates of 2027', async () => {
    const c = companyOf(h)
    const p = await newPractitioner(c, {
      time_zone: 'America/Mexico_City',
      working_hours: everyDay('08:00', '14:00'),
    })
    // Mondays 29 March to 8 November 2027: the old rules changed on Sunday 4 April and Sunday 31 October.
    const s = await book(
      c,
      seriesBody(c, { practitioner: p.id, start: '2027-03-29T09:00', rrule: 'FREQ=WEEKLY;UNTIL=20271108' }),
    )
    expect(s.time_zone).toBe('America/Mexico_City')
    const starts = startsOf(s)
    expect(starts).toHaveLength(33)
    expect(starts.slice(0, 2)).toEqual(['2027-03-29T15:00:00.000Z', '2027-04-05T15:00:00.000Z'])
    expect(starts.slice(-2)).toEqual(['2027-11-01T15:00:00.000Z', '2027-11-08T15:00:00.000Z'])
    for (const t of starts) expect(t).toMatch(/T15:00:00\.000Z$/)
    expect(s.rrule).toBe('FREQ=WEEKLY;UNTIL=20271108T235959')
  })

  test('America/Mexico_City: the last real change, 30 October 2022, is kept on both sides', async () => {
    const c = companyOf(h)
    const s = await book(
      c,
      seriesBody(c, {
        start: '2022-10-24T09:00',
        time_zone: 'America/Mexico_City',
        rrule: 'FREQ=WEEKLY;COUNT=2',
      }),
    )
    expect(startsOf(s)).toEqual(['2022-10-24T14:00:00.000Z', '2022-10-31T15:00:00.000Z'])
  })

  test('a wall time in the spring-forward gap is read with the offset before it; a repeated one is the first', async () => {
    const c = companyOf(h)
    const spring = await book(
      c,
      seriesBody(c, { start: '2027-03-27T02:30', rrule: 'FREQ=DAILY;COUNT=3', duration_minutes: 20 }),
    )
    // 02:30 on 28 March does not exist in Madrid: 02:30 CET = 01:30Z (03:30 CEST).
    expect(startsOf(spring)).toEqual([
      '2027-03-27T01:30:00.000Z',
      '2027-03-28T01:30:00.000Z',
      '2027-03-29T00:30:00.000Z',
    ])
    expect(localOf(spring.occurrences[1].starts_at, 'Europe/Madrid').time).toBe('03:30')
    const autumn = await book(
      c,
      seriesBody(c, { start: '2027-10-30T02:30', rrule: 'FREQ=DAILY;COUNT=3', duration_minutes: 20 }),
    )
    // 02:30 on 31 October occurs twice: the first, CEST (00:30Z).
    expect(startsOf(autumn)).toEqual([
      '2027-10-30T00:30:00.000Z',
      '2027-10-31T00:30:00.000Z',
      '2027-11-01T01:30:00.000Z',
    ])
  })

  test('monthly by day and by weekday, intervals and excluded dates', async () => {
    const c = companyOf(h)
    const lastFriday = await book(
      c,
      seriesBody(c, { start: '2027-01-29T17:00', rrule: 'FREQ=MONTHLY;BYDAY=-1FR;COUNT=3' }),
    )
    expect(lastFriday.occurrences.map((a: Json) => localOf(a.starts_at, 'Europe/Madrid').date)).toEqual([
      '2027-01-29',
      '2027-02-26',
      '2027-03-26',
    ])
    const s = await book(
      c,
      seriesBody(c, {
        start: '2027-05-03T08:00',
        rrule: 'FREQ=WEEKLY;INTERVAL=2;BYDAY=MO,TH;COUNT=6',
        exdates: ['2027-05-06', '2027-05-17'],
      }),
    )
    expect(s.occurrences.map((a: Json) => localOf(a.starts_at, 'Europe/Madrid').date)).toEqual([
      '2027-05-03',
      '2027-05-20',
      '2027-05-31',
      '2027-06-03',
    ])
    expect(s).toMatchObject({
      exdates: ['2027-05-06', '2027-05-17'],
      rrule: 'FREQ=WEEKLY;INTERVAL=2;COUNT=6;BYDAY=MO,TH',
    })
  })

  test("a registered practitioner plans in their zone; start may carry that zone's own offset only", async () => {
    const c = companyOf(h)
    const p = await newPractitioner(c, {
      time_zone: 'Atlantic/Canary',
      working_hours: everyDay('08:00', '14:00'),
    })
    const ok = await book(
      c,
      seriesBody(c, { practitioner: p.id, start: '2027-02-01T09:00+00:00', rrule: 'FREQ=DAILY;COUNT=2' }),
    )
    expect(startsOf(ok)).toEqual(['2027-02-01T09:00:00.000Z', '2027-02-02T09:00:00.000Z'])
    expect(ok.start).toBe('2027-02-01T09:00')
    const wrongOffset = await c.send(
      'POST',
      '/appointments/series',
      seriesBody(c, { practitioner: p.id, start: '2027-07-01T09:00+00:00' }),
    )
    expect(wrongOffset.statusCode).toBe(400)
    expect(wrongOffset.json().errors).toEqual([
      { path: '/start', message: expect.stringContaining('+01:00') },
    ])
    const otherZone = await c.send(
      'POST',
      '/appointments/series',
      seriesBody(c, { practitioner: p.id, time_zone: 'Europe/Madrid' }),
    )
    expect(otherZone.statusCode).toBe(400)
    expect(otherZone.json().errors).toEqual([
      { path: '/time_zone', message: expect.stringContaining('Atlantic/Canary') },
    ])
  })
})

describe('bad rules and limits', () => {
  test.each([
    ['FREQ=YEARLY;COUNT=2', 'FREQ must be DAILY, WEEKLY or MONTHLY'],
    ['FREQ=WEEKLY;COUNT=3;BYSETPOS=1', 'BYSETPOS is not supported'],
    ['FREQ=WEEKLY;COUNT=3;BYHOUR=9', 'BYHOUR is not supported'],
    ['FREQ=WEEKLY;COUNT=3;WKST=SU', 'WKST is not supported'],
    ['FREQ=WEEKLY', 'needs an end: COUNT or UNTIL'],
    ['FREQ=WEEKLY;COUNT=3;UNTIL=20271231', 'COUNT and UNTIL cannot both be given'],
    ['FREQ=WEEKLY;COUNT=105', 'COUNT must be a whole number from 1 to 104'],
    ['FREQ=WEEKLY;COUNT=3;INTERVAL=0', 'INTERVAL must be a whole number'],
    ['FREQ=WEEKLY;COUNT=3;BYDAY=XX', 'BYDAY must list days'],
    ['FREQ=WEEKLY;COUNT=3;BYDAY=1MO', 'BYDAY takes a number (1MO, -1FR) only with FREQ=MONTHLY'],
    ['FREQ=WEEKLY;COUNT=3;BYMONTHDAY=3', 'BYMONTHDAY cannot be used with FREQ=WEEKLY'],
    ['FREQ=MONTHLY;COUNT=3;BYMONTHDAY=32', 'BYMONTHDAY must be days 1 to 31'],
    ['FREQ=WEEKLY;COUNT=3;COUNT=4', 'COUNT is given more than once'],
    ['FREQ=WEEKLY;COUNT=3;FOO=1', 'FOO is not an RRULE part'],
    ['FREQ=WEEKLY;COUNT', '"COUNT" is not a part NAME=VALUE'],
    ['FREQ=WEEKLY;UNTIL=20271345', 'UNTIL must be a date'],
    ['FREQ=WEEKLY;COUNT=2;DTSTART=20270322T093000', 'DTSTART is not supported'],
  ])('%s: 400 naming /rrule and the part', async (rrule, message) => {
    const c = companyOf(h)
    const res = await c.send('POST', '/appointments/series', seriesBody(c, { rrule }))
    expect(res.statusCode).toBe(400)
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/)
    expect(res.json()).toMatchObject({ code: 'validation_failed' })
    expect(res.json().errors).toContainEqual({ path: '/rrule', message: expect.stringContaining(message) })
  })

  test.each([
    ['FREQ=DAILY;COUNT=104;INTERVAL=8', '/rrule', 'more than 2 years'],
    ['FREQ=DAILY;UNTIL=20271231', '/rrule', 'gives 285 occurrences: at most 104'],
    ['FREQ=WEEKLY;UNTIL=20270101', '/rrule', 'gives no occurrence'],
    ['FREQ=WEEKLY;BYDAY=TU;COUNT=2', '/start', 'its first would be 2027-03-23T09:30'],
  ])('%s: 400 (%s)', async (rrule, path, message) => {
    const c = companyOf(h)
    const res = await c.send('POST', '/appointments/series', seriesBody(c, { rrule }))
    expect(res.statusCode).toBe(400)
    expect(res.json().errors).toEqual([{ path, message: expect.stringContaining(message) }])
  })

  test('every bad field at once; start without a time, seconds, unknown fields', async () => {
    const c = companyOf(h)
    const res = await c.send('POST', '/appointments/series', {
      ...seriesBody(c, {
        start: '2027-03-22',
        rrule: 'FREQ=HOURLY;COUNT=2',
        duration_minutes: 2,
        time_zone: 'Mars/Base',
      }),
      id: '01900000-0000-7000-8000-000000000000',
      planet: 'earth',
    })
    expect(res.statusCode).toBe(400)
    const paths = res.json().errors.map((e: Json) => e.path)
    expect(paths).toEqual(
      expect.arrayContaining(['/start', '/rrule', '/duration_minutes', '/time_zone', '/id', '/planet']),
    )
    const seconds = await c.send(
      'POST',
      '/appointments/series',
      seriesBody(c, { start: '2027-03-22T09:30:15' }),
    )
    expect(seconds.json().errors).toEqual([{ path: '/start', message: 'must be on the minute (seconds 00)' }])
  })

  test('excluded dates that leave nothing are a 400 naming /exdates', async () => {
    const c = companyOf(h)
    const res = await c.send(
      'POST',
      '/appointments/series',
      seriesBody(c, { rrule: 'FREQ=DAILY;COUNT=1', exdates: ['2027-03-22'] }),
    )
    expect(res.json().errors).toEqual([{ path: '/exdates', message: 'leave no occurrence' }])
  })

  test('an unknown patient is 422 and nothing is booked', async () => {
    const c = companyOf(h)
    const res = await c.send('POST', '/appointments/series', {
      ...seriesBody(c),
      patient_id: '01900000-0000-7000-8000-00000000dead',
    })
    expect(res.statusCode).toBe(422)
    expect(res.json().code).toBe('unknown_patient')
  })
})

describe('a 52-occurrence weekly series', () => {
  test('books in one transaction: 52 appointments, their events, the series event; listed by series_id', async () => {
    const c = companyOf(h)
    const res = await c.send(
      'POST',
      '/appointments/series',
      seriesBody(c, { rrule: 'FREQ=WEEKLY;COUNT=52', reason: 'rehabilitacion' }),
    )
    expect(res.statusCode).toBe(201)
    const s = res.json()
    expect(res.headers.location).toBe(`/appointments/series/${s.id}`)
    expect(res.headers.etag).toBe('"1"')
    expect(s).toMatchObject({
      status: 'active',
      version: 1,
      skipped: [],
      previous_series_id: null,
      rrule: 'FREQ=WEEKLY;COUNT=52',
    })
    expect(s.occurrences).toHaveLength(52)
    expect(new Set(s.occurrences.map((a: Json) => a.id)).size).toBe(52)
    for (const a of s.occurrences)
      expect(a).toMatchObject({ series_id: s.id, reason: 'rehabilitacion', patient_id: s.patient_id })

    const list = await c.send('GET', `/appointments?series_id=${s.id}&limit=100`)
    expect(list.json().meta.total).toBe(52)
    expect(list.json().data.map((a: Json) => a.id)).toEqual(s.occurrences.map((a: Json) => a.id))
    const read = await c.send('GET', `/appointments/series/${s.id}`)
    expect(read.statusCode).toBe(200)
    expect(read.json()).toEqual(s)

    const events = await outboxOf(h.owner, c.principal.companyId, s.id)
    expect(events.map((e) => e.type)).toEqual(['appointment.series.created'])
    expect(events[0]!.payload.data).toEqual({
      id: s.id,
      patient_id: s.patient_id,
      practitioner: s.practitioner,
      codalmacen: 'ALM1',
      status: 'active',
      previous_series_id: null,
      occurrences: 52,
      skipped: 0,
      version: 1,
    })
    const first = await outboxOf(h.owner, c.principal.companyId, s.occurrences[0].id)
    expect(first.map((e) => e.type)).toEqual(['appointment.created'])
  })
})

describe('all or nothing', () => {
  /** A registered practitioner working weekdays 09:00-14:00, a series of six Mondays at 10:00, and three obstacles. */
  async function obstacles(c: Company) {
    const p = await newPractitioner(c, {
      working_hours: everyDay('09:00', '14:00', 'ALM1', [1, 2, 3, 4, 5]),
      slot_minutes: 30,
    })
    const body = seriesBody(c, {
      practitioner: p.id,
      start: '2027-09-06T10:00',
      rrule: 'FREQ=WEEKLY;COUNT=6',
    })
    // 2: the practitioner is busy; 4: the patient is (with someone else); 5: the practitioner is off.
    const taken = await c.book({
      practitioner: p.id,
      starts_at: '2027-09-13T08:15:00Z',
      ends_at: '2027-09-13T08:45:00Z',
    })
    const patientBusy = await c.book({
      patient_id: body.patient_id,
      practitioner: 'dra-otra',
      starts_at: '2027-09-27T08:00:00Z',
      ends_at: '2027-09-27T08:30:00Z',
    })
    const off = await c.send('POST', `/practitioners/${p.id}/time-off`, {
      starts_at: '2027-10-04T00:00:00+02:00',
      ends_at: '2027-10-05T00:00:00+02:00',
      reason: 'congreso',
    })
    expect(off.statusCode).toBe(201)
    return { p, body, taken, patientBusy }
  }

  test('409 series_conflict lists every conflict with alternatives, and nothing is booked', async () => {
    const c = companyOf(h)
    const { p, body, taken, patientBusy } = await obstacles(c)
    const res = await c.send('POST', '/appointments/series', body)
    expect(res.statusCode).toBe(409)
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/)
    const problem = res.json()
    expect(problem).toMatchObject({
      code: 'series_conflict',
      status: 409,
      detail: expect.stringContaining('3 of 6'),
    })
    expect(problem.conflicts.map((x: Json) => [x.occurrence, x.starts_at, x.reason])).toEqual([
      [2, '2027-09-13T08:00:00.000Z', 'practitioner_busy'],
      [4, '2027-09-27T08:00:00.000Z', 'patient_busy'],
      [5, '2027-10-04T08:00:00.000Z', 'time_off'],
    ])
    // The next free half hours of that practitioner's grid (09:00 local = 07:00Z, every 30 minutes).
    expect(problem.conflicts[0].alternatives).toEqual([
      {
        practitioner: p.id,
        codalmacen: 'ALM1',
        starts_at: '2027-09-13T09:00:00.000Z',
        ends_at: '2027-09-13T09:30:00.000Z',
      },
      {
        practitioner: p.id,
        codalmacen: 'ALM1',
        starts_at: '2027-09-13T09:30:00.000Z',
        ends_at: '2027-09-13T10:00:00.000Z',
      },
      {
        practitioner: p.id,
        codalmacen: 'ALM1',
        starts_at: '2027-09-13T10:00:00.000Z',
        ends_at: '2027-09-13T10:30:00.000Z',
      },
    ])
    expect(problem.conflicts[1].alternatives).toEqual([])
    expect(problem.conflicts[2].alternatives[0]).toMatchObject({ starts_at: '2027-10-05T07:00:00.000Z' })
    const mine = await c.send('GET', `/appointments?patient_id=${body.patient_id}`)
    expect(mine.json().data.map((a: Json) => a.id)).toEqual([patientBusy.id])
    const all = await h
      .owner('appointments')
      .where({ idempresa: c.principal.companyId })
      .whereNotNull('series_id')
    expect(all).toHaveLength(0)
    expect(await h.owner('series').where({ idempresa: c.principal.companyId })).toHaveLength(0)
    expect(taken.status).toBe('scheduled')
  })

  test('allow_partial books the free ones and keeps the others in skipped; outside hours too', async () => {
    const c = companyOf(h)
    const { body } = await obstacles(c)
    const s = await book(c, { ...body, allow_partial: true })
    expect(s.occurrences.map((a: Json) => a.occurrence)).toEqual([1, 3, 6])
    expect(s.skipped).toEqual([
      { occurrence: 2, starts_at: '2027-09-13T08:00:00.000Z', reason: 'practitioner_busy' },
      { occurrence: 4, starts_at: '2027-09-27T08:00:00.000Z', reason: 'patient_busy' },
      { occurrence: 5, starts_at: '2027-10-04T08:00:00.000Z', reason: 'time_off' },
    ])
    expect((await c.send('GET', `/appointments/series/${s.id}`)).json().skipped).toEqual(s.skipped)
    const [created] = await outboxOf(h.owner, c.principal.companyId, s.id)
    expect(created!.payload.data).toMatchObject({ occurrences: 3, skipped: 3 })

    // 13:45-14:15 ends after hours every time: nothing to book even with allow_partial.
    const late = await c.send('POST', '/appointments/series', {
      ...body,
      patient_id: c.newPatient(),
      start: '2027-09-06T13:45',
      allow_partial: true,
    })
    expect(late.statusCode).toBe(409)
    expect(late.json().conflicts.map((x: Json) => x.reason)).toEqual(Array(6).fill('outside_hours'))
  })
})

describe('a token limited to centers', () => {
  test('a conflict caused at a center it cannot see names no one: unavailable, no alternatives', async () => {
    const c = companyOf(h)
    const p = freeText()
    await c.book({
      practitioner: p,
      codalmacen: 'ALM2',
      starts_at: '2027-03-29T07:30:00Z',
      ends_at: '2027-03-29T08:00:00Z',
    })
    const alm1 = companyOf(h, { companyId: c.principal.companyId, allowedCenters: ['ALM1'] })
    const body = seriesBody(alm1, { practitioner: p })
    const refused = await alm1.send('POST', '/appointments/series', body)
    expect(refused.json().conflicts).toEqual([
      { occurrence: 2, starts_at: '2027-03-29T07:30:00.000Z', reason: 'unavailable', alternatives: [] },
    ])
    const partial = await book(alm1, { ...body, allow_partial: true })
    expect(partial.skipped).toEqual([
      { occurrence: 2, starts_at: '2027-03-29T07:30:00.000Z', reason: 'unavailable' },
    ])
    // The full token sees why.
    const full = await c.send('POST', '/appointments/series', { ...body, patient_id: c.newPatient() })
    expect(full.json().conflicts.map((x: Json) => x.reason)).toEqual(Array(4).fill('practitioner_busy'))
  })
})

describe('idempotency and tenancy', () => {
  test('Idempotency-Key replays the first answer; another body under it is 409', async () => {
    const c = companyOf(h)
    const body = seriesBody(c)
    const key = { 'idempotency-key': `series-${c.principal.companyId}` }
    const first = await c.send('POST', '/appointments/series', body, key)
    const again = await c.send('POST', '/appointments/series', body, key)
    expect(again.statusCode).toBe(201)
    expect(again.headers['idempotent-replayed']).toBe('true')
    expect(again.json()).toEqual(first.json())
    expect(await h.owner('series').where({ idempresa: c.principal.companyId })).toHaveLength(1)
    const other = await c.send('POST', '/appointments/series', { ...body, duration_minutes: 45 }, key)
    expect(other.statusCode).toBe(409)
    expect(other.json().code).toBe('idempotency_conflict')
  })

  test('another company gets 404 on every series endpoint, and lists none of its occurrences', async () => {
    const a = companyOf(h)
    const b = companyOf(h)
    const s = await book(a, seriesBody(a))
    const url = `/appointments/series/${s.id}`
    for (const res of [
      await b.send('GET', url),
      await b.send('PATCH', url, { scope: 'all', notes: 'x' }),
      await b.send('POST', `${url}/cancel`, { scope: 'all', reason: 'x' }),
    ]) {
      expect(res.statusCode).toBe(404)
      expect(res.json().code).toBe('not_found')
    }
    expect((await b.send('GET', `/appointments?series_id=${s.id}`)).json().meta.total).toBe(0)
    // Nor book a series for A's patient: as unknown to B as a patient that does not exist.
    const foreign = await b.send('POST', '/appointments/series', {
      ...seriesBody(b),
      patient_id: s.patient_id,
    })
    expect([foreign.statusCode, foreign.json().code]).toEqual([422, 'unknown_patient'])
    // A token of A limited to ALM2 does not see a series at ALM1 either.
    const alm2 = companyOf(h, { companyId: a.principal.companyId, allowedCenters: ['ALM2'] })
    expect((await alm2.send('GET', url)).statusCode).toBe(404)
    expect((await alm2.send('GET', `${url}?codalmacen=ALM1`)).statusCode).toBe(403)
    expect((await a.send('GET', `${url}?codalmacen=ALM2`)).statusCode).toBe(404)
    // Nothing of A changed.
    expect((await a.send('GET', url)).json()).toEqual(s)
  })
})
