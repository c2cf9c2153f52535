import { waitFor } from '@clinic/platform/testing'
import { Webhook } from 'standardwebhooks'
import {
  SCHEDULE_MS,
  appointmentCreated,
  principal,
  startReceiver,
  startWebhooks,
  type Receiver,
  type Webhooks,
} from '../helpers'

let w: Webhooks
let rx: Receiver
beforeAll(async () => {
  w = await startWebhooks()
  rx = await startReceiver()
})
afterAll(async () => {
  await rx.close()
  await w.close()
})
beforeEach(() => {
  rx.received.length = 0
  rx.rejected.length = 0
  rx.answer(() => 200)
})

async function endpoint(p = principal(), body: Record<string, unknown> = {}) {
  const res = await w.as(p)('POST', '/webhooks/endpoints', { url: rx.url, event_types: ['*'], ...body })
  expect(res.statusCode).toBe(201)
  const e = res.json<{ id: string; secret: string; version: number }>()
  rx.verifyWith([e.secret])
  return { p, e }
}
const log = async (p: ReturnType<typeof principal>, id: string) =>
  (await w.as(p)('GET', `/webhooks/endpoints/${id}/deliveries`)).json<{
    data: Array<Record<string, unknown>>
  }>().data

test('an event reaches the endpoint signed per Standard Webhooks, with thin data, and the log shows it', async () => {
  const { p, e } = await endpoint()
  expect(e.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/)
  const event = appointmentCreated(p.companyId)
  await w.publish([event])
  await waitFor(() => rx.received.length === 1)
  const got = rx.received[0]!
  expect(rx.rejected).toEqual([])
  expect(got.id).toBe(event.id)
  expect(got.payload).toEqual({
    type: 'appointment.created',
    timestamp: event.time,
    data: {
      id: event.subject,
      resource_type: 'appointment',
      codalmacen: 'ALM1',
      version: 1,
      changes: [],
      status: 'scheduled',
      url: `/api/appointments/${event.subject}`,
    },
  })
  // The reference library, on its own, accepts it; a wrong secret does not.
  const headers = {
    'webhook-id': got.id,
    'webhook-timestamp': got.timestamp,
    'webhook-signature': got.signature,
  }
  expect(new Webhook(e.secret).verify(got.body, headers)).toEqual(got.payload)
  expect(() =>
    new Webhook(`whsec_${Buffer.alloc(32, 1).toString('base64')}`).verify(got.body, headers),
  ).toThrow()
  await waitFor(async () => (await log(p, e.id))[0]?.status === 'succeeded')
  const [row] = await log(p, e.id)
  expect(row).toMatchObject({
    event_id: event.id,
    event_type: 'appointment.created',
    attempts: 1,
    last_status_code: 200,
  })
  expect(row!.next_attempt_at).toBeNull()
  // The secret is shown once, and stored sealed.
  expect((await w.as(p)('GET', `/webhooks/endpoints/${e.id}`)).json()).not.toHaveProperty('secret')
  const [stored] = await w.owner('endpoints').where({ id: e.id }).select('secret')
  expect(Buffer.from(stored.secret).includes(Buffer.from(e.secret.slice(6), 'base64'))).toBe(false)
})

test('a receiver that answers 500 three times gets the event again at each attempt, then 200', async () => {
  const { p, e } = await endpoint()
  rx.answer((n) => (n <= 3 ? 500 : 200))
  const event = appointmentCreated(p.companyId)
  await w.publish([event])
  for (let attempt = 1; attempt <= 3; attempt++) {
    await waitFor(() => rx.received.length === attempt)
    // A claimed row already counts the attempt and holds its lease as next_attempt_at; the retry's
    // time is written when the attempt ends: wait for the worker, not only for the receiver.
    await w.worker.idle()
    await waitFor(
      async () =>
        (await log(p, e.id))[0]?.attempts === attempt && (await log(p, e.id))[0]?.last_status_code === 500,
    )
    const [row] = await log(p, e.id)
    expect(row).toMatchObject({ status: 'pending', last_error: 'HTTP 500' })
    const due = new Date(row!.next_attempt_at as string).getTime() - w.now().getTime()
    // DESIGN's schedule, with up to 20% jitter.
    expect(due).toBeGreaterThanOrEqual(SCHEDULE_MS[attempt - 1]! * 0.8 - 1000)
    expect(due).toBeLessThanOrEqual(SCHEDULE_MS[attempt - 1]! * 1.2)
    w.advance(due - 100)
    await w.worker.idle()
    expect(rx.received).toHaveLength(attempt) // not before its time
    w.advance(200)
  }
  await waitFor(() => rx.received.length === 4)
  await waitFor(async () => (await log(p, e.id))[0]?.status === 'succeeded')
  expect(new Set(rx.received.map((r) => r.id))).toEqual(new Set([event.id]))
  expect((await log(p, e.id))[0]).toMatchObject({ attempts: 4, last_status_code: 200, last_error: null })
})

test('410 Gone disables the endpoint at once, with its reason and an audit event', async () => {
  const { p, e } = await endpoint()
  rx.answer(() => 410)
  await w.publish([appointmentCreated(p.companyId)])
  await waitFor(
    async () => (await w.as(p)('GET', `/webhooks/endpoints/${e.id}`)).json().status === 'disabled',
  )
  const got = (await w.as(p)('GET', `/webhooks/endpoints/${e.id}`)).json()
  expect(got.disabled_reason).toMatch(/410/)
  expect((await log(p, e.id))[0]).toMatchObject({ status: 'failed', last_status_code: 410 })
  const events = await w.owner('outbox').where({ type: 'webhooks.endpoint.disabled' }).select('payload')
  expect(events.some((r) => r.payload.subject === e.id && r.payload.idempresa === p.companyId)).toBe(true)
  // Events while disabled are not queued; enabling again takes new ones.
  await w.publish([appointmentCreated(p.companyId)])
  rx.answer(() => 200)
  const on = await w.as(p)('PATCH', `/webhooks/endpoints/${e.id}`, { status: 'enabled' })
  expect(on.json()).toMatchObject({ status: 'enabled', disabled_reason: null })
  await w.publish([appointmentCreated(p.companyId)])
  await waitFor(() => rx.received.length === 2)
})

test('after a rotation both secrets verify for 24 h, then only the new one', async () => {
  const { p, e } = await endpoint()
  const rotated = await w.as(p)('POST', `/webhooks/endpoints/${e.id}/rotate-secret`)
  expect(rotated.statusCode).toBe(200)
  const fresh = rotated.json<{ secret: string }>().secret
  expect(fresh).not.toBe(e.secret)
  rx.verifyWith([]) // checked one by one below
  await w.publish([appointmentCreated(p.companyId)])
  await waitFor(() => rx.received.length === 1)
  const h = (r = rx.received.at(-1)!) => ({
    'webhook-id': r.id,
    'webhook-timestamp': r.timestamp,
    'webhook-signature': r.signature,
  })
  expect(rx.received[0]!.signature.split(' ')).toHaveLength(2)
  expect(() => new Webhook(e.secret).verify(rx.received[0]!.body, h())).not.toThrow()
  expect(() => new Webhook(fresh).verify(rx.received[0]!.body, h())).not.toThrow()
  w.advance(24 * 3600_000 + 1000)
  await w.publish([appointmentCreated(p.companyId)])
  await waitFor(() => rx.received.length === 2)
  expect(rx.received[1]!.signature.split(' ')).toHaveLength(1)
  expect(() => new Webhook(e.secret).verify(rx.received[1]!.body, h())).toThrow()
  expect(() => new Webhook(fresh).verify(rx.received[1]!.body, h())).not.toThrow()
})

test('retry sends a delivery again now; replay sends every matching event since an instant', async () => {
  const { p, e } = await endpoint(principal(), { event_types: ['appointment.created'] })
  const events = [appointmentCreated(p.companyId), appointmentCreated(p.companyId)]
  await w.publish(events)
  await waitFor(() => rx.received.length === 2)
  await waitFor(async () => (await log(p, e.id)).every((d) => d.status === 'succeeded'))
  const [latest] = await log(p, e.id)
  const retried = await w.as(p)('POST', `/webhooks/deliveries/${latest!.id}/retry`)
  expect(retried.statusCode).toBe(202)
  expect(retried.json()).toEqual({ accepted: 1 })
  await waitFor(() => rx.received.length === 3)
  await waitFor(async () => (await log(p, e.id)).every((d) => d.status === 'succeeded'))
  const since = new Date(w.now().getTime() - 60_000).toISOString()
  const replayed = await w.as(p)('POST', `/webhooks/endpoints/${e.id}/replay`, { since })
  expect(replayed.statusCode).toBe(202)
  expect(replayed.json()).toEqual({ accepted: 2 })
  await waitFor(() => rx.received.length === 5)
  expect(
    rx.received
      .slice(3)
      .map((r) => r.id)
      .sort(),
  ).toEqual(events.map((x) => x.id).sort())
  const old = new Date(w.now().getTime() - 8 * 86_400_000).toISOString()
  const tooOld = await w.as(p)('POST', `/webhooks/endpoints/${e.id}/replay`, { since: old })
  expect(tooOld.statusCode).toBe(400)
  expect(tooOld.json().errors).toEqual([{ path: '/since', message: 'must be at most 7 days ago' }])
  const test = await w.as(p)('POST', `/webhooks/endpoints/${e.id}/test`)
  expect(test.statusCode).toBe(202)
  await waitFor(() => rx.received.some((r) => r.payload.type === 'webhook.test'))
})
