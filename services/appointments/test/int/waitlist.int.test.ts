import { uuidv7 } from '@clinic/platform'
import {
  asComms,
  companyOf,
  outboxOf,
  slot,
  startApp,
  startWaitlistWorker,
  type Company,
  type Harness,
} from '../helpers'
import { everyDay, localOf, newPractitioner } from './calendar-fixtures'

/** The waitlist's offers (DESIGN.md section 20) on the real database, the job run by its worker. */
let h: Harness
let offset = 0
const clock = () => new Date(Date.now() + offset)
/** comms' send window: at once, or (quietUntil) the end of quiet hours. */
let quietUntil: Date | null = null
let jobs: ReturnType<typeof startWaitlistWorker>

beforeAll(async () => {
  h = await startApp({ clock })
  jobs = startWaitlistWorker(h, {
    clock,
    sendWindow: async (_ctx, at) => (quietUntil && quietUntil > at ? quietUntil : at),
  })
})
afterAll(async () => {
  await jobs.worker.stop()
  await h.close()
})

/** Runs every due job and lapse now (the clock as the test set it). */
const runJobs = () => jobs.runJobs()

const answer = (c: Company, offerId: string, action: 'accept' | 'decline') =>
  asComms(h, c)('POST', `/internal/appointments/waitlist-offers/${offerId}/answer`, { action })
const readOffer = (c: Company, offerId: string) =>
  asComms(h, c)('GET', `/internal/appointments/waitlist-offers/${offerId}`)

async function entry(c: Company, body: Record<string, unknown>) {
  const res = await c.send('POST', '/appointments/waitlist', {
    codalmacen: 'ALM1',
    duration_minutes: 30,
    ...body,
  })
  expect(res.statusCode).toBe(201)
  return res.json() as { id: string; status: string }
}
const getEntry = async (c: Company, id: string) =>
  (await c.send('GET', `/appointments/waitlist/${id}`)).json()
const cancel = (c: Company, id: string) =>
  c.send('PATCH', `/appointments/${id}`, { status: 'cancelled', cancellation_reason: 'cannot come' })

/** A booked appointment of a practitioner of its own, and an entry waiting for that time. */
async function scene(c: Company, o: { entries?: number } = {}) {
  const practitioner = `dr-${uuidv7().slice(-8)}`
  const booked = await c.book({ practitioner })
  const entries = []
  for (let i = 0; i < (o.entries ?? 1); i++)
    entries.push(await entry(c, { patient_id: c.newPatient(), practitioner }))
  return { practitioner, booked, entries }
}

beforeEach(() => {
  offset = 0
  quietUntil = null
})

describe('a freed slot is offered to the waitlist', () => {
  test('a cancellation: the first entry is offered the slot, held (a plain booking is 409), accept books it once', async () => {
    const c = companyOf(h)
    const { practitioner, booked, entries } = await scene(c, { entries: 2 })
    expect((await cancel(c, booked.id)).statusCode).toBe(200)
    await runJobs()
    const first = await getEntry(c, entries[0]!.id)
    expect(first).toMatchObject({
      status: 'offered',
      offer: { starts_at: booked.starts_at, ends_at: booked.ends_at, practitioner },
    })
    expect(Date.parse(first.offer.expires_at) - Date.now()).toBeGreaterThan(29 * 60_000)
    expect((await getEntry(c, entries[1]!.id)).status).toBe('waiting')
    // Held: the slot is not free for a plain booking.
    const plain = await c.send(
      'POST',
      '/appointments',
      slot({
        patient_id: c.newPatient(),
        practitioner,
        starts_at: booked.starts_at,
        ends_at: booked.ends_at,
      }),
    )
    expect(plain.statusCode).toBe(409)
    const offered = (await outboxOf(h.owner, c.principal.companyId, entries[0]!.id)).map((e) => e.type)
    expect(offered).toEqual(['waitlist.entry.created', 'waitlist.entry.offered'])

    const accepted = await answer(c, first.offer.id, 'accept')
    expect(accepted.statusCode).toBe(200)
    expect(accepted.json()).toMatchObject({ state: 'accepted', entry_id: entries[0]!.id })
    const appointmentId = accepted.json().appointment_id
    const a = (await c.send('GET', `/appointments/${appointmentId}`)).json()
    expect(a).toMatchObject({
      starts_at: booked.starts_at,
      practitioner,
      status: 'scheduled',
      waitlist_entry_id: entries[0]!.id,
    })
    expect(await getEntry(c, entries[0]!.id)).toMatchObject({
      status: 'booked',
      appointment_id: appointmentId,
      offer: null,
    })
    // Again: answered as it stands, nothing booked twice.
    expect((await answer(c, first.offer.id, 'accept')).json()).toMatchObject({
      state: 'accepted',
      appointment_id: appointmentId,
    })
    expect((await answer(c, first.offer.id, 'decline')).json()).toMatchObject({ state: 'accepted' })
    const mine = await h
      .owner('appointments')
      .where({ idempresa: c.principal.companyId, waitlist_entry_id: entries[0]!.id })
    expect(mine).toHaveLength(1)
  })

  test('decline: the slot goes to the next entry; the decliner waits again and is not offered that slot again', async () => {
    const c = companyOf(h)
    const { booked, entries } = await scene(c, { entries: 2 })
    await cancel(c, booked.id)
    await runJobs()
    const offer = (await getEntry(c, entries[0]!.id)).offer
    expect((await answer(c, offer.id, 'decline')).json()).toMatchObject({ state: 'declined' })
    await runJobs()
    expect(await getEntry(c, entries[0]!.id)).toMatchObject({ status: 'waiting', offer: null })
    expect(await getEntry(c, entries[1]!.id)).toMatchObject({
      status: 'offered',
      offer: { starts_at: booked.starts_at },
    })
    const types = (await outboxOf(h.owner, c.principal.companyId, entries[0]!.id)).map((e) => e.type)
    expect(types).toEqual(['waitlist.entry.created', 'waitlist.entry.offered', 'waitlist.entry.declined'])
  })

  test('an offer left unanswered expires (the entry too) and the slot goes to the next entry', async () => {
    const c = companyOf(h)
    const { booked, entries } = await scene(c, { entries: 2 })
    await cancel(c, booked.id)
    await runJobs()
    const offer = (await getEntry(c, entries[0]!.id)).offer
    offset = 31 * 60_000
    expect((await readOffer(c, offer.id)).json()).toMatchObject({ state: 'expired' })
    await runJobs()
    expect(await getEntry(c, entries[0]!.id)).toMatchObject({ status: 'expired', offer: null })
    expect(await getEntry(c, entries[1]!.id)).toMatchObject({
      status: 'offered',
      offer: { starts_at: booked.starts_at },
    })
    expect((await answer(c, offer.id, 'accept')).json()).toMatchObject({
      state: 'expired',
      appointment_id: null,
    })
  })

  test('staff who book the held slot with hold_id win: the offer reads taken, the entry waits again', async () => {
    const c = companyOf(h)
    const { practitioner, booked, entries } = await scene(c)
    await cancel(c, booked.id)
    await runJobs()
    const offer = (await getEntry(c, entries[0]!.id)).offer
    const staff = await c.send(
      'POST',
      '/appointments',
      slot({
        patient_id: c.newPatient(),
        practitioner,
        starts_at: booked.starts_at,
        ends_at: booked.ends_at,
        hold_id: offer.id,
      }),
    )
    expect(staff.statusCode).toBe(201)
    expect((await readOffer(c, offer.id)).json()).toMatchObject({ state: 'taken' })
    expect((await answer(c, offer.id, 'accept')).json()).toMatchObject({
      state: 'taken',
      appointment_id: null,
    })
    expect(await getEntry(c, entries[0]!.id)).toMatchObject({ status: 'waiting', offer: null })
  })

  test('in quiet hours the offer waits for their end, its hold counted from then', async () => {
    const c = companyOf(h)
    const { booked, entries } = await scene(c)
    quietUntil = new Date(Date.now() + 8 * 3_600_000)
    await cancel(c, booked.id)
    await runJobs()
    const held = await getEntry(c, entries[0]!.id)
    expect(held.status).toBe('offered')
    expect(held.offer.sends_at).toBe(quietUntil.toISOString())
    expect(Date.parse(held.offer.expires_at)).toBe(quietUntil.getTime() + 30 * 60_000)
    const types = async () =>
      (await outboxOf(h.owner, c.principal.companyId, entries[0]!.id)).map((e) => e.type)
    expect(await types()).toEqual(['waitlist.entry.created'])
    offset = 8 * 3_600_000 + 1000
    await runJobs()
    expect(await types()).toEqual(['waitlist.entry.created', 'waitlist.entry.offered'])
  })

  test('entries that do not fit are passed over: another center, practitioner, too long, wrong day or time', async () => {
    const c = companyOf(h)
    const { practitioner, booked, entries } = await scene(c)
    const start = new Date(booked.starts_at)
    const wrongDay = ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'][(start.getUTCDay() + 7) % 7]
    const others = [
      await entry(c, { patient_id: c.newPatient(), practitioner, codalmacen: 'ALM2', priority: 9 }),
      await entry(c, { patient_id: c.newPatient(), practitioner: 'someone-else', priority: 9 }),
      await entry(c, { patient_id: c.newPatient(), practitioner, duration_minutes: 45, priority: 9 }),
      await entry(c, { patient_id: c.newPatient(), practitioner, days: [wrongDay], priority: 9 }),
      await entry(c, {
        patient_id: c.newPatient(),
        practitioner,
        times: { from: '20:00', to: '21:00' },
        priority: 9,
      }),
    ]
    await cancel(c, booked.id)
    await runJobs()
    for (const o of others) expect((await getEntry(c, o.id)).status).toBe('waiting')
    expect((await getEntry(c, entries[0]!.id)).status).toBe('offered')
  })

  test('priority first, then age; any practitioner matches', async () => {
    const c = companyOf(h)
    const { booked, entries } = await scene(c)
    const urgent = await entry(c, { patient_id: c.newPatient(), practitioner: null, priority: 5 })
    await cancel(c, booked.id)
    await runJobs()
    expect((await getEntry(c, urgent.id)).status).toBe('offered')
    expect((await getEntry(c, entries[0]!.id)).status).toBe('waiting')
  })

  test('two slots freed at once go to two different entries', async () => {
    const c = companyOf(h)
    const practitioner = `dr-${uuidv7().slice(-8)}`
    const [a, b] = [await c.book({ practitioner }), await c.book({ practitioner })]
    const e1 = await entry(c, { patient_id: c.newPatient(), practitioner })
    const e2 = await entry(c, { patient_id: c.newPatient(), practitioner })
    await Promise.all([cancel(c, a!.id), cancel(c, b!.id)])
    await runJobs()
    const [o1, o2] = [(await getEntry(c, e1.id)).offer, (await getEntry(c, e2.id)).offer]
    expect([o1.starts_at, o2.starts_at].sort()).toEqual([a!.starts_at, b!.starts_at].sort())
  })

  test('DELETE an offered entry: cancelled, its offer withdrawn, the slot offered to the next', async () => {
    const c = companyOf(h)
    const { booked, entries } = await scene(c, { entries: 2 })
    await cancel(c, booked.id)
    await runJobs()
    const offer = (await getEntry(c, entries[0]!.id)).offer
    expect((await c.send('DELETE', `/appointments/waitlist/${entries[0]!.id}`)).statusCode).toBe(204)
    expect((await c.send('DELETE', `/appointments/waitlist/${entries[0]!.id}`)).statusCode).toBe(204)
    expect((await readOffer(c, offer.id)).json()).toMatchObject({ state: 'withdrawn' })
    await runJobs()
    expect(await getEntry(c, entries[0]!.id)).toMatchObject({ status: 'cancelled', offer: null })
    expect((await getEntry(c, entries[1]!.id)).status).toBe('offered')
  })
})

describe('registered practitioners: free slots within their hours', () => {
  test('a cancellation of a registered practitioner is offered at the slot the calendar frees', async () => {
    const c = companyOf(h)
    const p = await newPractitioner(c, { working_hours: everyDay('09:00', '14:00'), slot_minutes: 30 })
    const booked = await c.book({
      practitioner: p.id,
      starts_at: '2030-03-04T08:00:00.000Z',
      ends_at: '2030-03-04T08:30:00.000Z',
    })
    const e = await entry(c, {
      patient_id: c.newPatient(),
      practitioner: p.id,
      earliest: '2030-03-04T00:00:00Z',
      latest: '2030-03-05T00:00:00Z',
    })
    await cancel(c, booked.id)
    await runJobs()
    expect(await getEntry(c, e.id)).toMatchObject({
      status: 'offered',
      offer: { starts_at: '2030-03-04T08:00:00.000Z', practitioner: p.id },
    })
  })

  test('new working hours free time: a Tuesday-only entry is offered a Tuesday once the practitioner works Tuesdays', async () => {
    const c = companyOf(h)
    const p = await newPractitioner(c, {
      working_hours: everyDay('09:00', '14:00', 'ALM1', [1]),
      slot_minutes: 30,
    })
    const e = await entry(c, {
      patient_id: c.newPatient(),
      practitioner: p.id,
      days: ['tue'],
      time_zone: 'Europe/Madrid',
    })
    await runJobs()
    expect((await getEntry(c, e.id)).status).toBe('waiting')
    const res = await c.send('PATCH', `/practitioners/${p.id}`, {
      working_hours: everyDay('09:00', '14:00', 'ALM1', [1, 2]),
    })
    expect(res.statusCode).toBe(200)
    await runJobs()
    const offered = await getEntry(c, e.id)
    expect(offered.status).toBe('offered')
    expect(localOf(offered.offer.starts_at, 'Europe/Madrid')).toMatchObject({ weekday: 2, time: '09:00' })
  })
})

describe('the waitlist endpoints', () => {
  test('another company sees none of it: 404 on read, delete and the offer; an empty list', async () => {
    const a = companyOf(h)
    const b = companyOf(h)
    const { booked, entries } = await scene(a)
    await cancel(a, booked.id)
    await runJobs()
    const offer = (await getEntry(a, entries[0]!.id)).offer
    expect((await b.send('GET', `/appointments/waitlist/${entries[0]!.id}`)).statusCode).toBe(404)
    expect((await b.send('DELETE', `/appointments/waitlist/${entries[0]!.id}`)).statusCode).toBe(404)
    expect((await readOffer(b, offer.id)).statusCode).toBe(404)
    expect((await answer(b, offer.id, 'accept')).statusCode).toBe(404)
    expect((await b.send('GET', '/appointments/waitlist')).json().data).toEqual([])
    expect(
      (await a.send('GET', `/appointments/waitlist?status=offered`))
        .json()
        .data.map((e: { id: string }) => e.id),
    ).toEqual([entries[0]!.id])
  })

  test('bad input: 400 naming the field; an unknown patient: 422', async () => {
    const c = companyOf(h)
    const bad = await c.send('POST', '/appointments/waitlist', {
      patient_id: c.newPatient(),
      codalmacen: 'ALM1',
      duration_minutes: 7,
      times: { from: '13:00', to: '09:00' },
    })
    expect(bad.statusCode).toBe(400)
    expect(JSON.stringify(bad.json())).toContain('/duration_minutes')
    const window = await c.send('POST', '/appointments/waitlist', {
      patient_id: c.newPatient(),
      codalmacen: 'ALM1',
      duration_minutes: 20,
      times: { from: '13:00', to: '09:00' },
    })
    expect(window.statusCode).toBe(400)
    expect(JSON.stringify(window.json())).toContain('/times/to')
    const unknown = await c.send('POST', '/appointments/waitlist', {
      patient_id: uuidv7(),
      codalmacen: 'ALM1',
      duration_minutes: 20,
    })
    expect(unknown.statusCode).toBe(422)
  })
})
