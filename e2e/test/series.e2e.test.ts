import { waitFor } from '@clinic/platform/testing'
import { SETTLE_MS, call, makeTenant, tokenFor, type Tenant } from '../src/client'

/**
 * Recurring series through the gateway (DESIGN.md section 20): booking with a conflict (409
 * series_conflict, then allow_partial), reading a series and its occurrences (native and FHIR), a
 * split that loses and doubles nothing, cancelling it all, the scopes, and a second company that
 * sees none of it. Every answer carries X-service-Version; every error is problem+json.
 */

let a: Tenant
let b: Tenant
let patient: string
const practitioner = 'dra-serie'

const ok = async (method: string, path: string, body?: unknown, token = a.token) => {
  const res = await call(method, path, { token, body })
  if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(res.body)}`)
  return res.body
}
const series = (o: Record<string, unknown> = {}) => ({
  patient_id: patient,
  practitioner,
  codalmacen: 'ALM1',
  start: '2031-09-01T10:00',
  duration_minutes: 30,
  rrule: 'FREQ=WEEKLY;BYDAY=MO;COUNT=4',
  reason: 'rehabilitacion',
  ...o,
})
const expectProblem = (
  res: { status: number; headers: Headers; body: any },
  status: number,
  code: string,
) => {
  expect([res.status, res.body?.code]).toEqual([status, code])
  expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/)
  expect(res.headers.get('x-service-version')).toMatch(/^\d{6}\.\d{2}$/)
}

beforeAll(async () => {
  ;[a, b] = await Promise.all([makeTenant(['ALM1', 'ALM2']), makeTenant(['ALM1'])])
  patient = (
    await ok('POST', '/patients', { first_name: 'Testa', last_name: 'Serie', birth_date: '1980-05-17' })
  ).id
  await ok('POST', '/practitioners', {
    id: practitioner,
    name: 'Dra. Serie',
    time_zone: 'Europe/Madrid',
    slot_minutes: 30,
    working_hours: [1, 2, 3, 4, 5].map((weekday) => ({
      codalmacen: 'ALM1',
      weekday,
      start: '09:00',
      end: '14:00',
    })),
  })
  // Reminders on: each occurrence's booking event schedules its own (comms, through the broker).
  await ok('PUT', '/comms/reminder-policy', { enabled: true, offsets: ['P1D', 'PT2H'] })
})

describe('recurring series through the gateway', () => {
  let booked: any

  it('409 series_conflict with alternatives, then allow_partial books the rest; read natively and as FHIR', async () => {
    // The second Monday (8 September, 10:00 CEST) is taken.
    await ok('POST', '/appointments', {
      patient_id: (
        await ok('POST', '/patients', { first_name: 'Otra', last_name: 'Serie', birth_date: '1990-01-01' })
      ).id,
      codalmacen: 'ALM1',
      practitioner,
      starts_at: '2031-09-08T10:00:00+02:00',
      ends_at: '2031-09-08T10:30:00+02:00',
    })
    const refused = await call('POST', '/appointments/series', { token: a.token, body: series() })
    expectProblem(refused, 409, 'series_conflict')
    expect(refused.body.conflicts).toEqual([
      {
        occurrence: 2,
        starts_at: '2031-09-08T08:00:00.000Z',
        reason: 'practitioner_busy',
        alternatives: [
          expect.objectContaining({ starts_at: '2031-09-08T08:30:00.000Z' }),
          expect.anything(),
          expect.anything(),
        ],
      },
    ])
    expect((await ok('GET', `/appointments?patient_id=${patient}`)).meta.total).toBe(0)

    const res = await call('POST', '/3/appointments/series', {
      token: a.token,
      headers: { 'idempotency-key': `series-${a.companyId}` },
      body: series({ allow_partial: true }),
    })
    expect(res.status).toBe(201)
    booked = res.body
    expect(res.headers.get('location')).toBe(`/api/3/appointments/series/${booked.id}`)
    expect(res.headers.get('etag')).toBe('"1"')
    expect(res.headers.get('x-service-version')).toMatch(/^\d{6}\.\d{2}$/)
    expect(booked.occurrences.map((o: any) => [o.occurrence, o.starts_at])).toEqual([
      [1, '2031-09-01T08:00:00.000Z'],
      [3, '2031-09-15T08:00:00.000Z'],
      [4, '2031-09-22T08:00:00.000Z'],
    ])
    expect(booked.skipped).toEqual([
      { occurrence: 2, starts_at: '2031-09-08T08:00:00.000Z', reason: 'practitioner_busy' },
    ])
    // Each occurrence is an ordinary appointment to comms: its reminders, a day and two hours before.
    for (const o of booked.occurrences as Array<{ id: string; starts_at: string }>) {
      const reminders = await waitFor(
        async () => {
          const r = await ok('GET', `/comms/reminders?appointment_id=${o.id}`)
          return r.data.length === 2 ? (r.data as Array<{ offset: string; due_at: string }>) : null
        },
        { timeoutMs: SETTLE_MS, what: `the reminders of occurrence ${o.id}` },
      )
      expect(reminders.map((r) => [r.offset, Date.parse(o.starts_at) - Date.parse(r.due_at)])).toEqual([
        ['P1D', 86_400_000],
        ['PT2H', 7_200_000],
      ])
    }

    const read = await call('GET', `/appointments/series/${booked.id}`, { token: a.token })
    expect([read.status, read.headers.get('etag')]).toEqual([200, '"1"'])
    expect(read.body).toEqual(booked)
    const list = await ok('GET', `/appointments?series_id=${booked.id}`)
    expect(list.data.map((o: any) => o.id)).toEqual(booked.occurrences.map((o: any) => o.id))
    const fhir = await call('GET', `/fhir/R4/Appointment/${booked.occurrences[0].id}`, { token: a.token })
    expect(fhir.status).toBe(200)
    expect(fhir.body).toMatchObject({
      resourceType: 'Appointment',
      id: booked.occurrences[0].id,
      status: 'booked',
    })
  })

  it('company B gets 404 on every series endpoint of A, and lists none of its occurrences', async () => {
    const url = `/appointments/series/${booked.id}`
    expectProblem(await call('GET', url, { token: b.token }), 404, 'not_found')
    expectProblem(
      await call('PATCH', url, { token: b.token, body: { scope: 'all', notes: 'x' } }),
      404,
      'not_found',
    )
    expectProblem(
      await call('POST', `${url}/cancel`, { token: b.token, body: { scope: 'all', reason: 'x' } }),
      404,
      'not_found',
    )
    expect((await ok('GET', `/appointments?series_id=${booked.id}`, undefined, b.token)).meta.total).toBe(0)
    expect((await ok('GET', url)).version).toBe(1)
  })

  it('a split moves the rest to a new series, losing and doubling nothing; cancel all cancels them', async () => {
    const s = await ok(
      'POST',
      '/appointments/series',
      series({ start: '2031-10-06T11:00', rrule: 'FREQ=WEEKLY;COUNT=6' }),
    )
    const split = await call('PATCH', `/appointments/series/${s.id}`, {
      token: a.token,
      body: { scope: 'following', occurrence: 4, start_time: '12:30' },
    })
    expect(split.status).toBe(200)
    const next = split.body
    expect(next).toMatchObject({
      previous_series_id: s.id,
      start: '2031-10-27T12:30',
      rrule: 'FREQ=WEEKLY;COUNT=3',
    })
    // 27 October 2031 is after the change to CET: 12:30 is 11:30Z.
    expect(next.occurrences.map((o: any) => o.starts_at)).toEqual([
      '2031-10-27T11:30:00.000Z',
      '2031-11-03T11:30:00.000Z',
      '2031-11-10T11:30:00.000Z',
    ])
    const old = await ok('GET', `/appointments/series/${s.id}`)
    expect(old).toMatchObject({ status: 'ended', next_series_id: next.id })
    const ids = [...old.occurrences, ...next.occurrences].map((o: any) => o.id)
    expect(ids.sort()).toEqual(s.occurrences.map((o: any) => o.id).sort())

    const cancelled = await ok('POST', `/appointments/series/${next.id}/cancel`, {
      scope: 'all',
      reason: 'alta medica',
    })
    expect(cancelled.status).toBe('cancelled')
    expect(cancelled.occurrences.map((o: any) => [o.status, o.cancellation_reason])).toEqual(
      Array(3).fill(['cancelled', 'alta medica']),
    )
    expectProblem(
      await call('PATCH', `/appointments/series/${next.id}`, {
        token: a.token,
        body: { scope: 'all', notes: 'x' },
      }),
      409,
      'invalid_transition',
    )
    expectProblem(
      await call('POST', '/appointments/series', {
        token: a.token,
        body: series({ rrule: 'FREQ=YEARLY;COUNT=2' }),
      }),
      400,
      'validation_failed',
    )
  })

  it('appointments:read reads series, appointments:write books them; other scopes are refused', async () => {
    const [reader, writer, other] = await Promise.all([
      tokenFor(a, '--scopes', 'appointments:read'),
      tokenFor(a, '--scopes', 'appointments:write'),
      tokenFor(a, '--scopes', 'patients:read,patients:write'),
    ])
    expect((await call('GET', `/appointments/series/${booked.id}`, { token: reader })).status).toBe(200)
    const write = await call('POST', '/appointments/series', {
      token: writer,
      body: series({ start: '2031-12-01T09:00', rrule: 'FREQ=DAILY;COUNT=2' }),
    })
    expect(write.status).toBe(201)
    const refused = await call('POST', '/appointments/series', { token: reader, body: series() })
    expectProblem(refused, 403, 'insufficient_scope')
    expect(refused.body.detail).toContain('appointments:write')
    expectProblem(
      await call('GET', `/appointments/series/${booked.id}`, { token: other }),
      403,
      'insufficient_scope',
    )
  })
})
