import { waitFor } from '@clinic/platform/testing'
import { SETTLE_MS, call, makeTenant, type Answer, type CallOptions, type Tenant } from '../src/client'

/**
 * The README's walk-through "Patient portal: find a free slot and keep it", step by step in the
 * same order, through the gateway as a client: register a practitioner with working hours at ALM1,
 * find the next free slot (`limit=1`), hold it, book it with `hold_id`, see it gone from
 * availability; a hold let go is offered again; another patient asking for the taken slot gets
 * 409 slot_conflict with `alternatives`; outside the hours 422 outside_working_hours unless the
 * booking says `outside_hours: true`. The steps share one company and run in order, as pasted.
 * The day is a Monday of 2031, so "minus the past" never takes a slot.
 */

/** The README's MON and TUE: Europe/Madrid is on summer time then (UTC+2), so 09:00 there is 07:00Z. */
const MON = '2031-06-02'
const TUE = '2031-06-03'
const DAY = `codalmacen=ALM1&from=${MON}T00:00:00Z&to=${TUE}T00:00:00Z`
const HOURS = [{ codalmacen: 'ALM1', weekday: 1, start: '09:00', end: '14:00' }]
/** Dra. Sanz's 20-minute slot at ALM1 on MON from hh:mm UTC, as availability shows it. */
const slot = (hhmm: string) => {
  const starts = new Date(`${MON}T${hhmm}:00.000Z`)
  return {
    practitioner: 'dra-sanz',
    codalmacen: 'ALM1',
    starts_at: starts.toISOString(),
    ends_at: new Date(starts.getTime() + 20 * 60_000).toISOString(),
  }
}
type Slot = ReturnType<typeof slot>
/** Her day: 09:00-14:00 Madrid time in 20-minute slots (UTC hh:mm). */
const GRID = Array.from({ length: 15 }, (_, i) =>
  new Date(Date.UTC(2031, 5, 2, 7, 20 * i)).toISOString().slice(11, 16),
)

let t: Tenant
/** Every answer carries X-service-Version; every error is application/problem+json. */
async function api<T = any>(method: string, path: string, o: CallOptions = {}): Promise<Answer<T>> {
  const res = await call<T>(method, path, { token: t.token, ...o })
  expect(res.headers.get('x-service-version')).toMatch(/^\d{6}\.\d{2}$/)
  if (res.status >= 400) expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/)
  return res
}
async function patient(first_name: string): Promise<string> {
  const res = await api('POST', '/patients', {
    body: { first_name, last_name: 'Portal', birth_date: '1988-03-14', codalmacen: 'ALM1' },
  })
  expect(res.status).toBe(201)
  return res.body.id
}
const startsOf = (res: Answer) =>
  (res.body.data as Array<{ starts_at: string }>).map((s) => s.starts_at.slice(11, 16))
const nextFree = async () => {
  const res = await api('GET', `/appointments/availability?${DAY}&limit=1`)
  expect(res.status).toBe(200)
  return res.body.data as Slot[]
}

/** What the steps share, as the README's shell variables: PID, SLOT, HOLD. */
let pid: string
let free: Slot
let hold: string

beforeAll(async () => {
  t = await makeTenant(['ALM1', 'ALM2'])
  pid = await patient('Ana')
})

describe('patient portal: find a free slot and keep it (README)', () => {
  it('registers a practitioner with working hours at ALM1', async () => {
    const res = await api('POST', '/practitioners', {
      body: { id: 'dra-sanz', name: 'Dra. Sanz', slot_minutes: 20, working_hours: HOURS },
    })
    expect(res.status).toBe(201)
    expect(res.headers.get('location')).toBe('/api/practitioners/dra-sanz')
    expect(res.headers.get('etag')).toBe('"1"')
    expect(res.body).toMatchObject({
      id: 'dra-sanz',
      name: 'Dra. Sanz',
      time_zone: 'Europe/Madrid',
      slot_minutes: 20,
      working_hours: HOURS,
      active: true,
      version: 1,
    })
    expect((await api('GET', `/appointments/availability?${DAY}`)).body).toEqual({ data: GRID.map(slot) })
  })

  it('finds the next free slot (limit=1) and holds it: no one else is offered it', async () => {
    const next = await nextFree()
    expect(next).toEqual([slot('07:00')])
    free = next[0]!
    const res = await api('POST', '/appointments/holds', { body: { ...free, patient_id: pid } })
    expect(res.status).toBe(201)
    expect(res.headers.get('location')).toBe(`/api/appointments/holds/${res.body.id}`)
    expect(res.body).toMatchObject({ ...free, patient_id: pid })
    // expires_at = now + HOLD_TTL_SECONDS (300 by default).
    const ttl = Date.parse(res.body.expires_at) - Date.parse(res.body.created_at)
    expect(Math.abs(ttl - 300_000)).toBeLessThan(5_000)
    hold = res.body.id
    expect(await nextFree()).toEqual([slot('07:20')])
  })

  it('books it with hold_id: the hold becomes the appointment, and the slot is gone from availability', async () => {
    const res = await api('POST', '/appointments', {
      body: { ...free, patient_id: pid, hold_id: hold, reason: 'revision' },
    })
    expect(res.status).toBe(201)
    expect(res.body).toMatchObject({ ...free, patient_id: pid, status: 'scheduled' })
    // The hold went with it.
    const gone = await api('DELETE', `/appointments/holds/${hold}`)
    expect(gone.status).toBe(404)
    expect(gone.body.code).toBe('not_found')
    expect(startsOf(await api('GET', `/appointments/availability?${DAY}`))).toEqual(GRID.slice(1))
  })

  it('a hold the patient lets go (204) is offered again', async () => {
    const [next] = await nextFree()
    expect(next).toEqual(slot('07:20'))
    const res = await api('POST', '/appointments/holds', { body: next })
    expect(res.status).toBe(201)
    expect(await nextFree()).toEqual([slot('07:40')])
    expect((await api('DELETE', `/appointments/holds/${res.body.id}`)).status).toBe(204)
    expect(await nextFree()).toEqual([slot('07:20')])
  })

  it('another patient asking for the taken slot: 409 slot_conflict with the next free slots, and books one', async () => {
    const luis = await patient('Luis')
    const clash = await api('POST', '/appointments', { body: { ...free, patient_id: luis } })
    expect(clash.status).toBe(409)
    expect(clash.body).toMatchObject({ code: 'slot_conflict', status: 409 })
    expect(clash.body.alternatives).toEqual([slot('07:20'), slot('07:40'), slot('08:00')])
    // Holding the taken slot is refused the same way.
    const held = await api('POST', '/appointments/holds', { body: free })
    expect(held.status).toBe(409)
    expect(held.body.code).toBe('slot_conflict')
    // The portal offers the alternatives at once; Luis takes the first.
    const res = await api('POST', '/appointments', {
      body: { ...clash.body.alternatives[0], patient_id: luis },
    })
    expect(res.status).toBe(201)
    expect(res.body).toMatchObject(slot('07:20'))
    expect(await nextFree()).toEqual([slot('07:40')])
  })

  it('outside the working hours: 422 outside_working_hours, then "outside_hours": true books it, as the audit trail shows', async () => {
    // The README's LATE: the slot six hours on, 15:00-15:20 Madrid time, after the 14:00 end.
    const late = { ...slot('13:00'), patient_id: pid }
    const refused = await api('POST', '/appointments', { body: late })
    expect(refused.status).toBe(422)
    expect(refused.body).toMatchObject({ code: 'outside_working_hours', status: 422 })
    expect(refused.body.detail).toContain('outside_hours')
    // Nor can it be held: a hold is for a slot of the grid.
    const held = await api('POST', '/appointments/holds', { body: slot('13:00') })
    expect(held.status).toBe(422)
    expect(held.body.code).toBe('outside_working_hours')
    // The front desk books it anyway, and the audit trail says so.
    const res = await api('POST', '/appointments', { body: { ...late, outside_hours: true } })
    expect(res.status).toBe(201)
    expect(res.body).toMatchObject({ ...slot('13:00'), patient_id: pid, status: 'scheduled' })
    const created = await waitFor(
      async () =>
        (
          await api('GET', `/audit/events?resource_type=appointment&resource_id=${res.body.id}`)
        ).body.data.find((e: { action: string }) => e.action === 'appointment.created'),
      { timeoutMs: SETTLE_MS, intervalMs: 200, what: 'appointment.created in the audit trail' },
    )
    expect(created.changes).toContain('outside_hours')
    // Outside the grid, it takes no slot of it.
    expect(startsOf(await api('GET', `/appointments/availability?${DAY}`))).toEqual(
      GRID.filter((s) => !['07:00', '07:20'].includes(s)),
    )
  })
})
