import { uuidv7 } from '@clinic/platform'
import { asComms, companyOf, slot, startApp, startWaitlistWorker, type Harness } from '../helpers'

/**
 * Race-safety of the waitlist (DESIGN.md section 20): 100 concurrent attempts on offered and free
 * slots (patients accepting and declining, staff booking with and without the hold, holds, more
 * cancellations, jobs running meanwhile) end with no double booking and no entry booked twice.
 */
let h: Harness
let jobs: ReturnType<typeof startWaitlistWorker>

beforeAll(async () => {
  h = await startApp({ poolMax: 10 })
  jobs = startWaitlistWorker(h, { sendWindow: async (_c, at) => at, concurrency: 4 })
})
afterAll(async () => {
  await jobs.worker.stop()
  await h.close()
})

const settle = () => jobs.runJobs()

test('100 concurrent attempts: no double booking, no entry booked twice, every offer consistent', async () => {
  const c = companyOf(h)
  const practitioner = `dr-${uuidv7().slice(-8)}`
  const booked = []
  for (let i = 0; i < 8; i++) booked.push(await c.book({ practitioner }))
  const entries = []
  for (let i = 0; i < 12; i++) {
    const res = await c.send('POST', '/appointments/waitlist', {
      patient_id: c.newPatient(),
      codalmacen: 'ALM1',
      practitioner,
      duration_minutes: 30,
    })
    entries.push(res.json().id as string)
  }
  // Four slots free and are offered; four more free during the storm.
  for (const a of booked.slice(0, 4))
    await c.send('PATCH', `/appointments/${a.id}`, { status: 'cancelled', cancellation_reason: 'x' })
  await settle()
  const offers = (await h
    .owner('waitlist_offers')
    .where({ idempresa: c.principal.companyId, state: 'open' })) as Array<{ id: string }>
  expect(offers).toHaveLength(4)

  const attempts: Array<() => Promise<unknown>> = []
  for (let i = 0; i < 100; i++) {
    const offer = offers[i % offers.length]!
    const a = booked[i % booked.length]!
    const at = { practitioner, starts_at: a.starts_at, ends_at: a.ends_at }
    switch (i % 7) {
      case 0:
      case 1:
        attempts.push(() =>
          asComms(h, c)('POST', `/internal/appointments/waitlist-offers/${offer.id}/answer`, {
            action: 'accept',
          }),
        )
        break
      case 2:
        attempts.push(() =>
          asComms(h, c)('POST', `/internal/appointments/waitlist-offers/${offer.id}/answer`, {
            action: 'decline',
          }),
        )
        break
      case 3:
        attempts.push(() =>
          c.send('POST', '/appointments', slot({ patient_id: c.newPatient(), ...at, hold_id: offer.id })),
        )
        break
      case 4:
        attempts.push(() => c.send('POST', '/appointments', slot({ patient_id: c.newPatient(), ...at })))
        break
      case 5:
        attempts.push(() => c.send('POST', '/appointments/holds', { codalmacen: 'ALM1', ...at }))
        break
      default:
        attempts.push(async () => {
          await c.send('PATCH', `/appointments/${a.id}`, { status: 'cancelled', cancellation_reason: 'x' })
          jobs.worker.wake()
        })
    }
  }
  const results = await Promise.allSettled(attempts.map((f) => f()))
  expect(results.filter((r) => r.status === 'rejected')).toEqual([])
  await settle()

  const company = c.principal.companyId
  // No two live claims of the practitioner overlap (appointments and holds alike).
  const overlapping = await h.owner.raw(
    `SELECT count(*)::int AS n FROM appointments.calendar x JOIN appointments.calendar y
       ON x.idempresa = y.idempresa AND x.practitioner = y.practitioner AND x.id < y.id AND x.during && y.during
     WHERE x.idempresa = ?`,
    [company],
  )
  expect(overlapping.rows[0].n).toBe(0)
  const active = await h
    .owner('appointments')
    .where({ idempresa: company, practitioner })
    .whereNotIn('status', ['cancelled', 'no_show'])
  const starts = active.map((a: { starts_at: Date }) => a.starts_at.toISOString())
  expect(new Set(starts).size).toBe(starts.length)
  // Each entry is booked at most once, and a booked entry is exactly its appointment.
  const byEntry = await h
    .owner('appointments')
    .where({ idempresa: company })
    .whereNotNull('waitlist_entry_id')
    .select('waitlist_entry_id', 'id')
  expect(new Set(byEntry.map((r: { waitlist_entry_id: string }) => r.waitlist_entry_id)).size).toBe(
    byEntry.length,
  )
  const rows = await h.owner('waitlist_entries').where({ idempresa: company }).whereIn('id', entries)
  for (const e of rows) {
    const mine = byEntry.filter((r: { waitlist_entry_id: string }) => r.waitlist_entry_id === e.id)
    expect([e.status, mine.length]).toEqual(e.status === 'booked' ? ['booked', 1] : [e.status, 0])
    if (e.status === 'booked') expect(mine[0].id).toBe(e.appointment_id)
  }
  // One open offer per entry at most, and an open offer still holds its slot.
  const open = await h.owner('waitlist_offers').where({ idempresa: company, state: 'open' })
  expect(new Set(open.map((o: { entry_id: string }) => o.entry_id)).size).toBe(open.length)
  for (const o of open)
    expect(await h.owner('calendar').where({ idempresa: company, id: o.id, kind: 'hold' })).toHaveLength(1)
  const accepted = await h.owner('waitlist_offers').where({ idempresa: company, state: 'accepted' })
  expect(accepted.length).toBeGreaterThan(0)
  for (const o of accepted) expect(byEntry.map((r: { id: string }) => r.id)).toContain(o.appointment_id)
})
