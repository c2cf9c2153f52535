import { execFile, type ChildProcess } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import path from 'node:path'
import { promisify } from 'node:util'
import { createTestDatabase, dropTestDatabase, freePort, waitFor } from '@clinic/platform/testing'
import { Webhook } from 'standardwebhooks'
import { serviceEnv } from '../../scripts/service-env.cjs'
import {
  SETTLE_MS,
  SLOW_TEST_MS,
  call,
  extraGateway,
  makeTenant,
  stack,
  tokenFor,
  type Answer,
  type Tenant,
} from '../src/client'
import { ROOT, startProcess } from '../src/stack'

/**
 * Webhooks and the change feed through the gateway (DESIGN.md section 10): endpoints, deliveries
 * signed per Standard Webhooks to a receiver on this machine (the stack runs with
 * WEBHOOKS_ALLOW_INSECURE=true, so plain http on 127.0.0.1), the delivery log, replay, retry, test
 * events, the feed and its long poll; companies and centers kept apart. The receiver verifies every
 * delivery with the reference library (`standardwebhooks`) and the secret of the endpoint it was
 * sent to; one that does not verify is refused (400) and fails the suite.
 */

/** Generous: on a busy 2-core machine an event goes through an outbox, RabbitMQ and a worker. */
const DELIVERY_MS = SETTLE_MS
/** Keys of the thin `data` of an event: never names, contacts or notes. */
const THIN_KEYS = ['changes', 'codalmacen', 'id', 'resource_type', 'status', 'url', 'version']

interface Payload {
  type: string
  timestamp: string
  data: { id: string; resource_type: string; codalmacen: string | null } & Record<string, unknown>
}
interface Received {
  /** The receiver's path: one per endpoint of this file. */
  path: string
  /** `webhook-id`: the event id, the same on every retry. */
  id: string
  body: string
  payload: Payload
}

/** A loopback receiver: each endpoint of this file posts to a path of its own, verified with its secret. */
async function startReceiver() {
  const secrets = new Map<string, string>()
  const received: Received[] = []
  const refused: string[] = []
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8')
      const at = req.url ?? ''
      try {
        const secret = secrets.get(at)
        if (req.method !== 'POST' || !secret) throw new Error('not an endpoint of this suite')
        const payload = new Webhook(secret).verify(body, req.headers as Record<string, string>) as Payload
        received.push({ path: at, id: String(req.headers['webhook-id']), body, payload })
        res.writeHead(204).end()
      } catch (err) {
        refused.push(`${req.method} ${at}: ${(err as Error).message}`)
        res.writeHead(400).end()
      }
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  return {
    /** A fresh path and its URL. */
    next: (label: string) => {
      const at = `/${label}-${randomUUID().slice(0, 8)}`
      return { path: at, url: `${base}${at}` }
    },
    trust: (at: string, secret: string) => secrets.set(at, secret),
    to: (at: string) => received.filter((r) => r.path === at),
    received,
    refused,
    close: () => {
      server.closeAllConnections()
      return new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}

let rx: Awaited<ReturnType<typeof startReceiver>>
let a: Tenant
let b: Tenant
/** A token of A limited to ALM1. */
let alm1: string
/** Before anything of this file happened: a replay from here sends all of A's events again. */
const started = new Date(Date.now() - 1000).toISOString()

beforeAll(async () => {
  ;[rx, a, b] = await Promise.all([
    startReceiver(),
    makeTenant(['ALM1', 'ALM2']),
    makeTenant(['ALM1', 'ALM2']),
  ])
  alm1 = await tokenFor(a, '--centers', 'ALM1')
}, SLOW_TEST_MS)
afterAll(() => rx?.close())
// Every delivery of every test verified with its endpoint's secret.
afterEach(() => expect(rx.refused).toEqual([]))

/** Registers an endpoint posting to a fresh path of the receiver; keeps its secret there. */
async function endpoint(token: string, label: string, body: Record<string, unknown> = {}, headers = {}) {
  const { path: at, url } = rx.next(label)
  const res = await call('POST', '/webhooks/endpoints', {
    token,
    headers,
    body: { url, event_types: ['*'], ...body },
  })
  if (res.status !== 201) throw new Error(`endpoint: ${res.status} ${JSON.stringify(res.body)}`)
  rx.trust(at, res.body.secret)
  return { id: res.body.id as string, secret: res.body.secret as string, path: at, url, res }
}
type Endpoint = Awaited<ReturnType<typeof endpoint>>

const deliveries = async (token: string, id: string, query = '') =>
  (await call('GET', `/webhooks/endpoints/${id}/deliveries?limit=100${query}`, { token })).body.data as Array<
    Record<string, unknown> & { id: string; event_id: string; event_type: string; status: string }
  >
const feed = (token: string, query = '') =>
  call<{
    data: Array<{ id: string; type: string; timestamp: string; data: Payload['data'] }>
    meta: { next: string }
  }>('GET', `/events${query}`, { token, timeoutMs: 60_000 })

/** Waits until the endpoint at `at` got an event of `type` about resource `id`; returns it. */
const arrival = (at: string, type: string, id: string) =>
  waitFor(() => rx.to(at).find((r) => r.payload.type === type && r.payload.data.id === id), {
    timeoutMs: DELIVERY_MS,
    intervalMs: 100,
    what: `${type} ${id} at ${at}`,
  })

const patient = async (t: Tenant, codalmacen: string, marker: string) => {
  const res = await call('POST', '/patients', {
    token: t.token,
    body: {
      first_name: marker,
      last_name: `${marker}son`,
      birth_date: '1984-03-04',
      codalmacen,
      email: `${marker.toLowerCase()}@example.test`,
      phone: '+34600999111',
      notes: `${marker} notes`,
    },
  })
  if (res.status !== 201) throw new Error(`patient: ${res.status} ${JSON.stringify(res.body)}`)
  return res.body.id as string
}

let epA: Endpoint
let epB: Endpoint
const ofA: { patient?: string; appointment?: string; events: Record<string, string> } = { events: {} }
const ofB = new Set<string>()

describe('webhook endpoints and deliveries through the gateway', () => {
  it('registers an endpoint: 201 with the secret once, Location, ETag and X-service-Version', async () => {
    const key = { 'idempotency-key': `wh-${a.companyId}` }
    epA = await endpoint(a.token, 'a', { description: 'CRM sync' }, key)
    const { res } = epA
    expect(res.status).toBe(201)
    expect(res.headers.get('location')).toBe(`/api/webhooks/endpoints/${epA.id}`)
    expect(res.headers.get('etag')).toBe('"1"')
    expect(res.headers.get('x-service-version')).toMatch(/^\d{6}\.\d{2}$/)
    expect(res.body).toEqual({
      id: epA.id,
      url: epA.url,
      event_types: ['*'],
      codalmacen: null,
      description: 'CRM sync',
      status: 'enabled',
      disabled_reason: null,
      created_at: expect.any(String),
      updated_at: expect.any(String),
      version: 1,
      secret: expect.stringMatching(/^whsec_[A-Za-z0-9+/]{43}=$/),
    })
    // Shown in that answer only: not on a read nor in the list.
    const read = await call('GET', `/webhooks/endpoints/${epA.id}`, { token: a.token })
    expect([read.status, read.headers.get('etag')]).toEqual([200, '"1"'])
    expect(read.body).not.toHaveProperty('secret')
    const list = await call('GET', '/webhooks/endpoints', { token: a.token })
    expect(list.body.data.map((e: { id: string }) => e.id)).toEqual([epA.id])
    expect(JSON.stringify(list.body)).not.toContain(epA.secret)
    // A retry with the same Idempotency-Key is the same endpoint, not a second one.
    const again = await call('POST', '/webhooks/endpoints', {
      token: a.token,
      headers: key,
      body: { url: epA.url, event_types: ['*'], description: 'CRM sync' },
    })
    expect([again.status, again.body.id]).toEqual([201, epA.id])
    expect((await call('GET', '/webhooks/endpoints', { token: a.token })).body.meta.total).toBe(1)
    // Company B's, to see below that it never gets A's events.
    epB = await endpoint(b.token, 'b')
  })

  it('delivers patient.created and appointment.created signed, with thin data and the event id as webhook-id', async () => {
    const marker = `Wh${randomUUID().slice(0, 8)}`
    ofA.patient = await patient(a, 'ALM1', marker)
    const p = await arrival(epA.path, 'patient.created', ofA.patient)
    // Booked once patient.created is stored, so the feed's order below is known.
    const booked = await call('POST', '/appointments', {
      token: a.token,
      body: {
        patient_id: ofA.patient,
        codalmacen: 'ALM1',
        practitioner: 'dra-webhook',
        starts_at: '2031-10-06T09:00:00Z',
        ends_at: '2031-10-06T09:30:00Z',
        reason: `${marker} reason`,
      },
    })
    expect(booked.status).toBe(201)
    ofA.appointment = booked.body.id as string
    const ap = await arrival(epA.path, 'appointment.created', ofA.appointment)
    ofA.events = { 'patient.created': p.id, 'appointment.created': ap.id }
    expect(p.payload).toEqual({
      type: 'patient.created',
      timestamp: expect.any(String),
      data: {
        id: ofA.patient,
        resource_type: 'patient',
        codalmacen: 'ALM1',
        version: 1,
        changes: [],
        url: `/api/patients/${ofA.patient}`,
      },
    })
    expect(ap.payload).toEqual({
      type: 'appointment.created',
      timestamp: expect.any(String),
      data: {
        id: ofA.appointment,
        resource_type: 'appointment',
        codalmacen: 'ALM1',
        version: 1,
        changes: [],
        status: 'scheduled',
        url: `/api/appointments/${ofA.appointment}`,
      },
    })
    for (const r of [p, ap]) {
      expect(Object.keys(r.payload.data).every((k) => THIN_KEYS.includes(k))).toBe(true)
      // No name, contact, note or reason: the receiver reads the resource through the API.
      expect(r.body).not.toMatch(new RegExp(`${marker}|example\\.test|600999111`, 'i'))
      expect(r.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-/)
    }
    // webhook-id is the event id: the feed's id of the same event.
    const listed = (await feed(a.token)).body.data
    expect(listed.find((e) => e.data.id === ofA.patient && e.type === 'patient.created')?.id).toBe(p.id)
    expect(listed.find((e) => e.data.id === ofA.appointment)?.id).toBe(ap.id)
    // The delivery log: one row per event, succeeded at the first attempt with the receiver's 204.
    const log = await waitFor(
      async () => {
        const rows = await deliveries(a.token, epA.id)
        return rows.length === 2 && rows.every((d) => d.status === 'succeeded') ? rows : null
      },
      { timeoutMs: DELIVERY_MS, what: 'both deliveries succeeded in the log' },
    )
    // Newest first.
    expect(log.map((d) => [d.event_id, d.event_type])).toEqual([
      [ap.id, 'appointment.created'],
      [p.id, 'patient.created'],
    ])
    for (const d of log)
      expect(d).toMatchObject({
        endpoint_id: epA.id,
        status: 'succeeded',
        attempts: 1,
        last_status_code: 204,
        last_error: null,
        next_attempt_at: null,
        succeeded_at: expect.any(String),
      })
    const succeeded = await deliveries(a.token, epA.id, '&status=succeeded&event_type=patient.created')
    expect(succeeded.map((d) => d.event_id)).toEqual([p.id])
  })

  it('replays every event since an instant, retries one delivery, and sends webhook.test', async () => {
    const count = (id: string) => rx.to(epA.path).filter((r) => r.id === id).length
    const replayed = await call('POST', `/webhooks/endpoints/${epA.id}/replay`, {
      token: a.token,
      body: { since: started },
    })
    expect([replayed.status, replayed.body]).toEqual([202, { accepted: 2 }])
    await waitFor(() => Object.values(ofA.events).every((id) => count(id) === 2), {
      timeoutMs: DELIVERY_MS,
      what: 'both events again',
    })
    // The same event ids (webhook-id) and payloads as the first time.
    const copies = rx.to(epA.path).filter((r) => r.id === ofA.events['patient.created'])
    expect(copies[1]!.payload).toEqual(copies[0]!.payload)
    const settled = async () => {
      const rows = await deliveries(a.token, epA.id)
      return rows.every((d) => d.status === 'succeeded') ? rows : null
    }
    const log = await waitFor(settled, { timeoutMs: DELIVERY_MS, what: 'the replay to settle' })
    const row = log.find((d) => d.event_type === 'patient.created')!
    const retried = await call('POST', `/webhooks/deliveries/${row.id}/retry`, { token: a.token })
    expect([retried.status, retried.body]).toEqual([202, { accepted: 1 }])
    await waitFor(() => count(ofA.events['patient.created']!) === 3, {
      timeoutMs: DELIVERY_MS,
      what: 'the retried delivery',
    })
    await waitFor(settled, { timeoutMs: DELIVERY_MS, what: 'the retry to settle' })
    // Further back than 7 days: 400.
    const tooOld = await call('POST', `/webhooks/endpoints/${epA.id}/replay`, {
      token: a.token,
      body: { since: new Date(Date.now() - 8 * 86_400_000).toISOString() },
    })
    expect([tooOld.status, tooOld.body.code]).toEqual([400, 'validation_failed'])

    const test = await call('POST', `/webhooks/endpoints/${epA.id}/test`, { token: a.token })
    expect([test.status, test.body]).toEqual([202, { accepted: 1 }])
    const got = await waitFor(() => rx.to(epA.path).find((r) => r.payload.type === 'webhook.test'), {
      timeoutMs: DELIVERY_MS,
      what: 'webhook.test',
    })
    expect(got.payload.data).toEqual({
      id: epA.id,
      resource_type: 'webhook_endpoint',
      codalmacen: null,
      version: null,
      changes: [],
      url: `/api/webhooks/endpoints/${epA.id}`,
    })
    // Only to that endpoint, and not in the feed.
    expect(rx.to(epB.path).some((r) => r.payload.type === 'webhook.test')).toBe(false)
    expect((await feed(a.token, '?types=webhook.test')).body.data).toEqual([])
  })
})

describe('the change feed through the gateway', () => {
  it('lists the same events in order, filters and pages them', async () => {
    const page = await feed(a.token)
    expect(page.status).toBe(200)
    expect(page.headers.get('x-service-version')).toBeTruthy()
    expect(page.body.data.map((e) => [e.type, e.id, e.data.id])).toEqual([
      ['patient.created', ofA.events['patient.created'], ofA.patient],
      ['appointment.created', ofA.events['appointment.created'], ofA.appointment],
    ])
    // The feed's data is the delivery's data.
    const delivered = rx.to(epA.path).find((r) => r.id === ofA.events['appointment.created'])!
    expect(page.body.data[1]).toEqual({ id: delivered.id, ...delivered.payload })
    const types = await feed(a.token, '?types=appointment.created,appointment.updated')
    expect(types.body.data.map((e) => e.id)).toEqual([ofA.events['appointment.created']])
    const first = await feed(a.token, '?limit=1')
    expect(first.body.data.map((e) => e.id)).toEqual([ofA.events['patient.created']])
    const rest = await feed(a.token, `?limit=1&after=${first.body.meta.next}`)
    expect(rest.body.data.map((e) => e.id)).toEqual([ofA.events['appointment.created']])
    const end = await feed(a.token, `?after=${page.body.meta.next}`)
    expect([end.body.data, end.body.meta.next]).toEqual([[], page.body.meta.next])
    expect((await feed(a.token, '?codalmacen=ALM2')).body.data).toEqual([])
  })

  it('waits with `wait` when there is nothing new, and answers as soon as an event is stored', async () => {
    const head = (await feed(a.token)).body.meta.next
    // Nothing new: an empty page after the wait.
    const t0 = Date.now()
    const idle = await feed(a.token, `?after=${head}&wait=1`)
    expect([idle.status, idle.body.data]).toEqual([200, []])
    expect(Date.now() - t0).toBeGreaterThanOrEqual(900)
    // A poll waiting while a patient is created answers with its event, long before its 30 s are
    // up: on the event, not at the end of the wait (however slow the machine, not 25 s slow).
    const t1 = Date.now()
    const polling = feed(a.token, `?after=${head}&wait=30`).then((res) => ({ res, ms: Date.now() - t1 }))
    const id = await patient(a, 'ALM1', `Poll${randomUUID().slice(0, 6)}`)
    const { res, ms } = await polling
    expect(res.status).toBe(200)
    expect(res.body.data.map((e) => [e.type, e.data.id])).toEqual([['patient.created', id]])
    expect(ms).toBeLessThan(25_000)
    // The same with wait=5, as a client loops: polls again from meta.next until the event comes.
    let after = res.body.meta.next
    const t2 = Date.now()
    const polls = (async () => {
      for (;;) {
        const next = await feed(a.token, `?after=${after}&wait=5`)
        if (next.body.data.length || Date.now() - t2 > DELIVERY_MS) return next
        after = next.body.meta.next
      }
    })()
    const other = await patient(a, 'ALM1', `Poll${randomUUID().slice(0, 6)}`)
    expect((await polls).body.data.map((e) => [e.type, e.data.id])).toEqual([['patient.created', other]])
    const last = await arrival(epA.path, 'patient.created', other)
    ofA.events[`patient.created ${id}`] = res.body.data[0]!.id
    ofA.events[`patient.created ${other}`] = last.id
  }, 120_000)
})

describe('companies and centers', () => {
  it("company B gets none of A's events, and A's endpoints and deliveries are 404 to B", async () => {
    const own = await patient(b, 'ALM1', `Bee${randomUUID().slice(0, 6)}`)
    ofB.add(own)
    await arrival(epB.path, 'patient.created', own)
    // B's endpoint got B's events only; A's got none of B's.
    expect(rx.to(epB.path).map((r) => r.payload.data.id)).toEqual([own])
    expect(rx.to(epA.path).some((r) => ofB.has(r.payload.data.id))).toBe(false)
    const aDelivery = (await deliveries(a.token, epA.id))[0]!
    const before = await call('GET', `/webhooks/endpoints/${epA.id}`, { token: a.token })
    const since = new Date(Date.now() - 3600_000).toISOString()
    const tries: Array<[string, string, unknown?]> = [
      ['GET', `/webhooks/endpoints/${epA.id}`],
      ['PATCH', `/webhooks/endpoints/${epA.id}`, { description: 'changed by another company' }],
      ['POST', `/webhooks/endpoints/${epA.id}/rotate-secret`],
      ['POST', `/webhooks/endpoints/${epA.id}/test`],
      ['GET', `/webhooks/endpoints/${epA.id}/deliveries`],
      ['POST', `/webhooks/endpoints/${epA.id}/replay`, { since }],
      ['POST', `/webhooks/deliveries/${aDelivery.id}/retry`],
      ['DELETE', `/webhooks/endpoints/${epA.id}`],
    ]
    for (const [method, url, body] of tries) {
      const res = await call(method, url, { token: b.token, body })
      expect([method, url, res.status, res.body?.code]).toEqual([method, url, 404, 'not_found'])
      expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/)
    }
    // Nothing of A in B's lists; A's endpoint is as it was (same version, same secret).
    const listB = await call('GET', '/webhooks/endpoints', { token: b.token })
    expect(listB.body.data.map((e: { id: string }) => e.id)).toEqual([epB.id])
    const feedB = await feed(b.token)
    expect(feedB.body.data.map((e) => e.data.id)).toEqual([own])
    const text = JSON.stringify(feedB.body)
    for (const id of [ofA.patient!, ofA.appointment!, ...Object.values(ofA.events)])
      expect(text).not.toContain(id)
    const after = await call('GET', `/webhooks/endpoints/${epA.id}`, { token: a.token })
    expect(after.body).toEqual(before.body)
    const test = await call('POST', `/webhooks/endpoints/${epA.id}/test`, { token: a.token })
    expect(test.status).toBe(202)
    await waitFor(() => rx.to(epA.path).filter((r) => r.payload.type === 'webhook.test').length === 2, {
      timeoutMs: DELIVERY_MS,
      what: "A's second webhook.test, signed with A's unrotated secret",
    })
  })

  it('a token limited to ALM1 must name its center, and sees only ALM1 endpoints and events', async () => {
    const body = (codalmacen?: string) => ({
      url: rx.next('refused').url,
      event_types: ['patient.created'],
      ...(codalmacen ? { codalmacen } : {}),
    })
    for (const sent of [body(), body('ALM2')]) {
      const res = await call('POST', '/webhooks/endpoints', { token: alm1, body: sent })
      expect([res.status, res.body.code]).toEqual([403, 'center_forbidden'])
    }
    const epL = await endpoint(alm1, 'alm1', { codalmacen: 'ALM1', event_types: ['patient.created'] })
    expect(epL.res.body).toMatchObject({ codalmacen: 'ALM1', event_types: ['patient.created'] })
    const ep2 = await endpoint(a.token, 'alm2', { codalmacen: 'ALM2' })
    // The limited token's list: its center's endpoint only (not A's of every center, nor ALM2's).
    const list = await call('GET', '/webhooks/endpoints', { token: alm1 })
    expect(list.body.data.map((e: { id: string }) => e.id)).toEqual([epL.id])
    for (const id of [epA.id, ep2.id]) {
      const res = await call('GET', `/webhooks/endpoints/${id}`, { token: alm1 })
      expect([res.status, res.body.code]).toEqual([404, 'not_found'])
      const log = await call('GET', `/webhooks/endpoints/${id}/deliveries`, { token: alm1 })
      expect(log.status).toBe(404)
    }
    expect((await call('GET', '/webhooks/endpoints?codalmacen=ALM2', { token: alm1 })).status).toBe(403)
    // The whole company's token sees all three.
    const all = await call('GET', '/webhooks/endpoints', { token: a.token })
    expect(all.body.data.map((e: { id: string }) => e.id)).toEqual([epA.id, epL.id, ep2.id])
    // An endpoint of a center gets that center's events only.
    const at2 = await patient(a, 'ALM2', `Dos${randomUUID().slice(0, 6)}`)
    await arrival(ep2.path, 'patient.created', at2)
    const at1 = await patient(a, 'ALM1', `Uno${randomUUID().slice(0, 6)}`)
    await arrival(epL.path, 'patient.created', at1)
    await arrival(epA.path, 'patient.created', at2)
    expect(rx.to(epL.path).map((r) => r.payload.data.id)).toEqual([at1])
    expect(rx.to(ep2.path).map((r) => r.payload.data.id)).toEqual([at2])
    // The feed: ALM1's events only, to the limited token; ALM2 is 403 to it.
    const limited = await feed(alm1)
    expect(limited.body.data.every((e) => e.data.codalmacen === 'ALM1')).toBe(true)
    const ids = limited.body.data.map((e) => e.data.id)
    expect(ids).toContain(at1)
    expect(ids).not.toContain(at2)
    expect((await feed(a.token)).body.data.map((e) => e.data.id)).toEqual(expect.arrayContaining([at1, at2]))
    expect((await feed(alm1, '?codalmacen=ALM2')).status).toBe(403)
    // And company B's endpoint got none of it.
    expect(rx.to(epB.path).every((r) => ofB.has(r.payload.data.id))).toBe(true)
  })
})

describe('unsafe URLs', () => {
  const problemOf = (res: Answer) => ({
    status: res.status,
    type: res.headers.get('content-type')?.split(';')[0],
    code: res.body?.code,
  })
  const unsafe = { status: 422, type: 'application/problem+json', code: 'unsafe_url' }

  it('refuses credentials in the URL even in development (the stack allows plain http on 127.0.0.1)', async () => {
    for (const url of ['https://user:pass@hooks.example.com/x', 'ftp://hooks.example.com/x']) {
      const res = await call('POST', '/webhooks/endpoints', {
        token: a.token,
        body: { url, event_types: ['*'] },
      })
      expect(problemOf(res)).toEqual(unsafe)
    }
  })

  /**
   * The shared stack is a development one (WEBHOOKS_ALLOW_INSECURE=true takes any address). A
   * production-configured webhooks service, on a database of its own and with no broker (it gets no
   * events, so it takes nothing from the shared stack), behind a gateway of its own.
   */
  it('refuses https://10.0.0.1/x (a private address) with 422 unsafe_url, as configured for production', async () => {
    const exec = promisify(execFile)
    const databaseUrl = await createTestDatabase(stack().env.DATABASE_URL)
    const port = await freePort()
    const env: Record<string, string> = {
      ...stack().env,
      DATABASE_URL: databaseUrl,
      AMQP_URL: `amqp://guest:guest@127.0.0.1:${await freePort()}`,
      WEBHOOKS_PORT: String(port),
      WEBHOOKS_ALLOW_INSECURE: 'false',
      E2E_LOG_DIR: '',
    }
    let child: ChildProcess | undefined
    let gw: Awaited<ReturnType<typeof extraGateway>> | undefined
    try {
      await exec(process.execPath, [path.join(ROOT, 'services/webhooks/dist/db/migrate.js')], {
        env: { ...process.env, ...serviceEnv('webhooks', env) },
      })
      child = startProcess('webhooks', env)
      const url = `http://127.0.0.1:${port}`
      await waitFor(async () => (await fetch(`${url}/health`)).status > 0, {
        timeoutMs: 60_000,
        what: 'the production-configured webhooks service',
      })
      gw = await extraGateway({ WEBHOOKS_URL: url })
      const t = await makeTenant(['ALM1'])
      const post = (body: unknown) =>
        call('POST', '/webhooks/endpoints', { base: gw!.api, token: t.token, body })
      for (const target of [
        'https://10.0.0.1/x',
        'https://[::ffff:169.254.169.254]/x',
        'http://hooks.example.com/x',
      ])
        expect({ target, ...problemOf(await post({ url: target, event_types: ['*'] })) }).toEqual({
          target,
          ...unsafe,
        })
      // The same request to the development stack is taken: the setting, not the request, differs.
      const dev = await call('POST', '/webhooks/endpoints', {
        token: t.token,
        body: { url: 'https://10.0.0.1/x', event_types: ['*'] },
      })
      expect(dev.status).toBe(201)
      expect((await call('DELETE', `/webhooks/endpoints/${dev.body.id}`, { token: t.token })).status).toBe(
        204,
      )
    } finally {
      await gw?.stop()
      if (child && child.exitCode === null && child.signalCode === null) {
        const exited = new Promise((resolve) => child!.once('exit', resolve))
        child.kill('SIGTERM')
        await exited
      }
      await dropTestDatabase(databaseUrl)
    }
  }, 180_000)
})
