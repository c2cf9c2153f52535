import { randomUUID } from 'node:crypto'
import { waitFor } from '@clinic/platform/testing'
import { call, makeTenant, tokenFor, type Tenant } from '../src/client'

/**
 * The waitlist through the gateway (DESIGN.md section 20), as a client sees it: a cancelled slot is
 * held and offered to the first matching entry by itself, every endpoint refuses another company,
 * errors are problem+json. The offer's page and answers are in waitlist-offer.e2e (a browser); the
 * offer's expiry, races and quiet hours in the service's int tests (an injected clock).
 */
let a: Tenant
let b: Tenant
beforeAll(async () => {
  ;[a, b] = await Promise.all([makeTenant(['ALM1', 'ALM2']), makeTenant(['ALM1'])])
})

async function patientOf(t: Tenant): Promise<string> {
  const res = await call('POST', '/patients', {
    token: t.token,
    body: { first_name: 'Testa', last_name: 'Espera', birth_date: '1980-05-17', codalmacen: 'ALM1' },
  })
  if (res.status !== 201) throw new Error(`patient: ${res.status}`)
  return res.body.id
}
const day = '2031-09-15'
const at = (hhmm: string) => `${day}T${hhmm}:00+02:00`
/** A practitioner of its own per test (free text): its calendar is the test's alone. */
const practitioner = () => `dr-espera-${randomUUID().slice(0, 8)}`

const entryOf = (t: Tenant, id: string) => call('GET', `/appointments/waitlist/${id}`, { token: t.token })
const offered = (t: Tenant, id: string) =>
  waitFor(
    async () => {
      const e = (await entryOf(t, id)).body
      return e.status === 'offered' ? e : null
    },
    { timeoutMs: 30_000, what: `waitlist entry ${id} offered` },
  )

describe('the waitlist through the gateway', () => {
  it('a cancelled appointment is held and offered to the first waiting entry; a plain booking of it is 409', async () => {
    const dr = practitioner()
    const [p1, p2, p3] = await Promise.all([patientOf(a), patientOf(a), patientOf(a)])
    const booked = await call('POST', '/appointments', {
      token: a.token,
      body: {
        patient_id: p1,
        codalmacen: 'ALM1',
        practitioner: dr,
        starts_at: at('10:00'),
        ends_at: at('10:30'),
      },
    })
    expect(booked.status).toBe(201)
    const first = await call('POST', '/appointments/waitlist', {
      token: a.token,
      headers: { 'idempotency-key': `wl-${a.companyId}-1` },
      body: {
        patient_id: p2,
        codalmacen: 'ALM1',
        practitioner: dr,
        duration_minutes: 30,
        days: ['mon'],
        times: { from: '09:00', to: '13:00' },
        time_zone: 'Europe/Madrid',
      },
    })
    expect(first.status).toBe(201)
    expect(first.headers.get('location')).toBe(`/api/appointments/waitlist/${first.body.id}`)
    expect(first.headers.get('x-service-version')).toMatch(/^\d{6}\.\d{2}$/)
    expect(first.body).toMatchObject({
      status: 'waiting',
      priority: 0,
      offer: null,
      appointment_id: null,
      days: ['mon'],
    })
    const second = await call('POST', '/appointments/waitlist', {
      token: a.token,
      body: { patient_id: p3, codalmacen: 'ALM1', practitioner: null, duration_minutes: 30 },
    })
    expect(second.status).toBe(201)

    const cancelled = await call('PATCH', `/appointments/${booked.body.id}`, {
      token: a.token,
      body: { status: 'cancelled', cancellation_reason: 'el paciente no puede venir' },
    })
    expect(cancelled.status).toBe(200)
    const e = await offered(a, first.body.id)
    expect(e.offer).toMatchObject({
      starts_at: '2031-09-15T08:00:00.000Z',
      ends_at: '2031-09-15T08:30:00.000Z',
      practitioner: dr,
    })
    expect(Date.parse(e.offer.expires_at) - Date.parse(e.offer.sends_at)).toBe(30 * 60_000)
    expect((await entryOf(a, second.body.id)).body.status).toBe('waiting')

    const plain = await call('POST', '/appointments', {
      token: a.token,
      body: {
        patient_id: p3,
        codalmacen: 'ALM1',
        practitioner: dr,
        starts_at: at('10:00'),
        ends_at: at('10:30'),
      },
    })
    expect(plain.status).toBe(409)
    expect(plain.headers.get('content-type')).toMatch(/^application\/problem\+json/)
    expect(plain.body.code).toBe('slot_conflict')

    const list = await call('GET', `/appointments/waitlist?status=offered&practitioner=${dr}`, {
      token: a.token,
    })
    expect(list.status).toBe(200)
    expect(list.body.data.map((x: { id: string }) => x.id)).toEqual([first.body.id])

    // The audit trail has the entry's events, the waitlist as the actor of the offer.
    const trail = await waitFor(
      async () => {
        const r = await call(
          'GET',
          `/audit/events?resource_type=waitlist_entry&resource_id=${first.body.id}`,
          { token: a.token },
        )
        return r.body.data?.length >= 2 ? r.body.data : null
      },
      { timeoutMs: 30_000, what: 'the waitlist events on the audit trail' },
    )
    expect(trail.map((x: { action: string }) => x.action).sort()).toEqual([
      'waitlist.entry.created',
      'waitlist.entry.offered',
    ])

    // Taken off the list: cancelled, the offer withdrawn, the slot offered to the next entry.
    const del = await call('DELETE', `/appointments/waitlist/${first.body.id}`, { token: a.token })
    expect(del.status).toBe(204)
    expect((await entryOf(a, first.body.id)).body).toMatchObject({ status: 'cancelled', offer: null })
    expect((await offered(a, second.body.id)).offer).toMatchObject({
      starts_at: '2031-09-15T08:00:00.000Z',
      practitioner: dr,
    })
  })

  it('another company: 404 on read and delete, an empty list, and its own token cannot name our patient', async () => {
    const p = await patientOf(a)
    const mine = await call('POST', '/appointments/waitlist', {
      token: a.token,
      body: { patient_id: p, codalmacen: 'ALM1', duration_minutes: 20 },
    })
    expect(mine.status).toBe(201)
    for (const [method, path] of [
      ['GET', `/appointments/waitlist/${mine.body.id}`],
      ['DELETE', `/appointments/waitlist/${mine.body.id}`],
    ] as const) {
      const res = await call(method, path, { token: b.token })
      expect([method, res.status, res.body.code]).toEqual([method, 404, 'not_found'])
      expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/)
    }
    expect((await call('GET', '/appointments/waitlist', { token: b.token })).body.data).toEqual([])
    const theirs = await call('POST', '/appointments/waitlist', {
      token: b.token,
      body: { patient_id: p, codalmacen: 'ALM1', duration_minutes: 20 },
    })
    expect([theirs.status, theirs.body.code]).toEqual([422, 'unknown_patient'])
    expect((await entryOf(a, mine.body.id)).body.status).toBe('waiting')
  })

  it('scopes, bad input and centers: 403 without appointments:write, 400 naming the field, 403 for a center not its own', async () => {
    const reader = await tokenFor(a, '--scopes', 'appointments:read')
    const p = await patientOf(a)
    const body = { patient_id: p, codalmacen: 'ALM1', duration_minutes: 20 }
    const refused = await call('POST', '/appointments/waitlist', { token: reader, body })
    expect([refused.status, refused.body.code]).toEqual([403, 'insufficient_scope'])
    expect((await call('GET', '/appointments/waitlist', { token: reader })).status).toBe(200)
    const bad = await call('POST', '/appointments/waitlist', {
      token: a.token,
      body: { ...body, duration_minutes: 7, days: ['someday'] },
    })
    expect(bad.status).toBe(400)
    const paths = bad.body.errors.map((x: { path: string }) => x.path)
    expect(paths).toEqual(expect.arrayContaining(['/duration_minutes', '/days/0']))
    const alm1 = await tokenFor(a, '--centers', 'ALM1')
    const other = await call('POST', '/appointments/waitlist', {
      token: alm1,
      body: { ...body, codalmacen: 'ALM2' },
    })
    expect(other.status).toBe(403)
  })
})
