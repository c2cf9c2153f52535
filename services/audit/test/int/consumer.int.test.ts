import type { Knex } from 'knex'
import {
  accessBatch,
  eventKeysBySource,
  signEvent,
  uuidv7,
  type Amqp,
  type CloudEvent,
  type Consumer,
  type EventKeys,
} from '@clinic/platform'
import { gatewayHeaders, testPrincipal, waitFor } from '@clinic/platform/testing'
import { auditTrailRepository, chainReader } from '../../src/db/repositories/audit-events-repository'
import { verifyCompany } from '../../src/domain/verify-company'
import { startAuditConsumer } from '../../src/events/consumer'
import { domainEvent, httpEvent, patientData } from '../helpers'
import {
  buildTestApp,
  chainKey,
  connectAmqp,
  countEvents,
  eventsOf,
  log,
  migrateAudit,
  signingSecret,
  writerDb,
} from './setup'

// A loaded machine (2 cores, parallel projects) can take seconds to deliver; waitFor bounds each wait.
jest.setTimeout(60_000)

let knex: Knex
let amqp: Amqp
const stops: Array<() => Promise<unknown>> = []
const queueName = () => `audit.events.test.${uuidv7()}`

beforeAll(async () => {
  await migrateAudit()
  knex = writerDb()
  amqp = await connectAmqp()
})
afterEach(async () => {
  for (const stop of stops.splice(0).reverse()) await stop()
})
afterAll(async () => {
  await amqp.close()
  await knex.destroy()
})

type App = Awaited<ReturnType<typeof buildTestApp>>
async function testApp(): Promise<App> {
  const app = await buildTestApp(knex, amqp)
  stops.push(() => app.close())
  return app
}

async function consumer(o: {
  queue: string
  prefetch?: number
  amqp?: Amqp
  knex?: Knex
  metrics?: App['metrics']
  keys?: EventKeys
  bindings?: string[]
}): Promise<Consumer> {
  const c = await startAuditConsumer({
    amqp: o.amqp ?? amqp,
    knex: o.knex ?? knex,
    log,
    queue: o.queue,
    bindings: o.bindings,
    prefetch: o.prefetch,
    signingSecret: o.keys ?? signingSecret(),
    trail: auditTrailRepository(chainKey()),
    metrics: o.metrics ?? (await testApp()).metrics,
  })
  stops.push(() => c.stop())
  return c
}

describe('audit consumer', () => {
  it('records a published event, and the company lists it with its actor', async () => {
    await consumer({ queue: queueName() })
    const principal = testPrincipal({ username: 'alice' })
    const data = { ...patientData(), changes: ['phone'] }
    const event = domainEvent('patient.updated', data, { principal })
    await amqp.publish([event])
    await waitFor(() => countEvents(knex, principal.companyId), {
      timeoutMs: 30_000,
      what: 'the event on the trail',
    })

    const app = await buildTestApp(knex, amqp)
    stops.push(() => app.close())
    const url = '/audit/events'
    const res = await app.inject({ method: 'GET', url, headers: await gatewayHeaders(principal, 'GET', url) })
    expect(res.statusCode).toBe(200)
    const body = res.json()
    expect(body.meta).toEqual({ total: 1, offset: 0, limit: 25, next: null })
    expect(body.data[0]).toEqual({
      id: event.id,
      occurred_at: event.time,
      recorded_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      action: 'patient.updated',
      outcome: 'success',
      resource_type: 'patient',
      resource_id: data.id,
      codalmacen: 'ALM1',
      actor: { user_id: principal.userId, username: 'alice', token_id: principal.tokenId },
      request_id: event.requestid,
      source: 'clinic/patients',
      http: null,
      changes: ['phone'],
      seq: 1,
      prev_hash: '0'.repeat(64),
      hash: expect.stringMatching(/^k1\.[0-9a-f]{64}$/),
    })
    expect(res.body).not.toContain(data.last_name)
    expect(res.body).not.toContain(data.email!)

    // Another company sees none of it.
    const other = testPrincipal()
    const res2 = await app.inject({ method: 'GET', url, headers: await gatewayHeaders(other, 'GET', url) })
    expect(res2.json()).toEqual({ data: [], meta: { total: 0, offset: 0, limit: 25, next: null } })
  })

  it('records denied and failed requests from the gateway', async () => {
    await consumer({ queue: queueName() })
    const principal = testPrincipal()
    const events = [403, 404, 500].map((status) =>
      httpEvent(principal, { status, path: '/api/patients/x', method: 'PATCH' }),
    )
    await amqp.publish(events)
    await waitFor(async () => (await countEvents(knex, principal.companyId, { outcome: 'failure' })) === 3, {
      timeoutMs: 30_000,
    })
    const rows = await eventsOf(knex, principal.companyId, (q) => q.orderBy('seq'))
    expect(rows.map((r) => r.http.status).sort()).toEqual([403, 404, 500])
  })

  it("records each access event of the gateway's http.batch as a row of its company, once even when the batch comes twice", async () => {
    await consumer({ queue: queueName(), prefetch: 4 })
    const [a, b] = [testPrincipal(), testPrincipal()]
    const inner = [
      httpEvent(a, { status: 200 }),
      httpEvent(b, { status: 404, method: 'PATCH' }),
      httpEvent(a, { status: 201, method: 'POST' }),
    ]
    const batch = accessBatch(inner)
    await amqp.publish([batch])
    await amqp.publish([batch]) // as after a relay that crashed before deleting its row
    await waitFor(
      async () => (await countEvents(knex, a.companyId)) === 2 && countEvents(knex, b.companyId),
      {
        timeoutMs: 30_000,
        what: "the batch's events on the trail",
      },
    )
    const ofCompany = (company: number) =>
      eventsOf(knex, company, (q) =>
        q.orderBy('seq').select('idempresa', 'id', 'seq', 'action', 'request_id', 'http'),
      )
    const rows = [...(await ofCompany(a.companyId)), ...(await ofCompany(b.companyId))]
    expect(rows.map((r) => [r.idempresa, r.id, r.seq, r.action, r.request_id, r.http.status])).toEqual([
      [a.companyId, inner[0]!.id, 1, 'http.request', inner[0]!.requestid, 200],
      [a.companyId, inner[2]!.id, 2, 'http.request', inner[2]!.requestid, 201],
      [b.companyId, inner[1]!.id, 1, 'http.request', inner[1]!.requestid, 404],
    ])
    for (const p of [a, b])
      await expect(verifyCompany(chainReader(knex), p.companyId, chainKey())).resolves.toMatchObject({
        ok: true,
      })
  })

  it('records nothing of a batch that holds anything but access events of the gateway', async () => {
    const queue = queueName()
    // Unbound: messages go straight to the queue, as anyone with publish rights on the vhost could.
    await consumer({ queue, bindings: [] })
    const principal = testPrincipal()
    // Signed with the services' key, but one entry claims to be a patients event.
    const smuggled = accessBatch([
      httpEvent(principal),
      domainEvent('patient.created', patientData(), { principal }) as never,
    ])
    const miscounted = accessBatch([httpEvent(principal)])
    miscounted.data.count = 2
    const sentinelOwner = testPrincipal()
    const sentinel = accessBatch([httpEvent(sentinelOwner)])
    for (const e of [smuggled, miscounted, sentinel])
      await amqp.sendToQueue(queue, Buffer.from(JSON.stringify(signEvent(e, signingSecret()))), {
        messageId: e.id,
      })
    await waitFor(() => countEvents(knex, sentinelOwner.companyId), {
      timeoutMs: 30_000,
      what: 'the sentinel',
    })
    // The two bad batches were tried first (one message at a time after their batch failed).
    expect(await countEvents(knex, principal.companyId)).toBe(0)
  })

  it('stores a redelivered event once', async () => {
    // One consumer taking one message at a time: once the sentinel is in, the duplicate was handled.
    await consumer({ queue: queueName(), prefetch: 1 })
    const principal = testPrincipal()
    const event = domainEvent('patient.created', patientData(), { principal })
    const sentinel = domainEvent('patient.created', patientData(), { principal })
    await amqp.publish([event])
    await amqp.publish([event])
    await amqp.publish([sentinel])
    await waitFor(() => countEvents(knex, principal.companyId, { id: sentinel.id }), {
      timeoutMs: 30_000,
      what: 'the sentinel',
    })
    expect(await countEvents(knex, principal.companyId, { id: event.id })).toBe(1)
    expect(await countEvents(knex, principal.companyId)).toBe(2)
    await expect(verifyCompany(chainReader(knex), principal.companyId, chainKey())).resolves.toMatchObject({
      ok: true,
      count: 2,
    })
  })

  it('two instances on one queue record every event exactly once, and every chain holds', async () => {
    const queue = queueName()
    // Two instances: their own broker connections and database pools.
    const amqp2 = await connectAmqp('audit-test-2')
    const knex2 = writerDb()
    stops.push(
      () => knex2.destroy(),
      () => amqp2.close(),
    )
    await consumer({ queue, prefetch: 4 })
    await consumer({ queue, prefetch: 4, amqp: amqp2, knex: knex2 })

    const companies = [testPrincipal(), testPrincipal(), testPrincipal()]
    const perCompany = 40
    const events: CloudEvent[] = []
    for (let i = 0; i < perCompany; i++)
      for (const p of companies) events.push(domainEvent('patient.created', patientData(), { principal: p }))
    // Every event twice, as after a redelivery, interleaved.
    for (let i = 0; i < events.length; i += 20) {
      const batch = events.slice(i, i + 20)
      await amqp.publish([...batch, ...batch.reverse()])
    }

    for (const p of companies)
      await waitFor(async () => (await countEvents(knex, p.companyId)) === perCompany, {
        timeoutMs: 30_000,
        what: `company ${p.companyId}'s events`,
      })
    for (const p of companies) {
      const rows = await eventsOf(knex, p.companyId, (q) => q.orderBy('seq').select('id', 'seq'))
      expect(new Set(rows.map((r) => r.id)).size).toBe(perCompany)
      expect(rows.map((r) => r.seq)).toEqual(Array.from({ length: perCompany }, (_, i) => i + 1))
      await expect(verifyCompany(chainReader(knex), p.companyId, chainKey())).resolves.toMatchObject({
        ok: true,
        count: perCompany,
      })
    }
  })

  it('refuses unsigned and badly signed events into the dead-letter queue, and counts them', async () => {
    const queue = queueName()
    const { metrics } = await testApp()
    // Unbound: the run's vhost carries other suites' events, which this queue would refuse too.
    await consumer({ queue, metrics, bindings: [] })
    const principal = testPrincipal()
    const signed = domainEvent('patient.created', patientData(), { principal })
    const unsigned = domainEvent('patient.created', patientData(), { principal })
    const forged = signEvent(domainEvent('patient.created', patientData(), { principal }), 'x'.repeat(32))
    const tampered = {
      ...signEvent(domainEvent('patient.created', patientData(), { principal }), signingSecret()),
    }
    tampered.idempresa = principal.companyId + 1
    // Straight to the queue, as anyone with publish rights on the vhost could.
    for (const e of [unsigned, forged, tampered, signEvent(signed, signingSecret())])
      await amqp.sendToQueue(queue, Buffer.from(JSON.stringify(e)), { messageId: e.id })
    await waitFor(() => countEvents(knex, principal.companyId), {
      timeoutMs: 30_000,
      what: 'the signed event',
    })

    const dead = await amqp.withChannel(async (ch) => {
      await waitFor(async () => (await ch.checkQueue(`${queue}.dlq`)).messageCount === 3, {
        timeoutMs: 30_000,
        what: 'three dead letters',
      })
      const ids: string[] = []
      for (
        let m = await ch.get(`${queue}.dlq`, { noAck: true });
        m;
        m = await ch.get(`${queue}.dlq`, { noAck: true })
      )
        ids.push((JSON.parse(m.content.toString('utf8')) as { id: string }).id)
      await ch.deleteQueue(`${queue}.dlq`)
      return ids
    })
    expect(dead.sort()).toEqual([unsigned.id, forged.id, tampered.id].sort())
    const rows = (await eventsOf(knex, principal.companyId, (q) => q.select('id'))).map((r) => r.id)
    expect(rows).toEqual([signed.id])
    expect(await countEvents(knex, principal.companyId + 1)).toBe(0)
    const counted = await metrics.getSingleMetricAsString('events_refused_total')
    expect(counted).toContain(`events_refused_total{queue="${queue}",reason="unsigned",service="audit"} 1`)
    expect(counted).toContain(
      `events_refused_total{queue="${queue}",reason="bad_signature",service="audit"} 2`,
    )
  })

  it("with a key per source, a service's key cannot sign another service's events", async () => {
    const patientsKey = 'p'.repeat(40)
    const gatewayKey = 'g'.repeat(40)
    const queue = queueName()
    const { metrics } = await testApp()
    await consumer({
      queue,
      metrics,
      bindings: [],
      keys: eventKeysBySource([`patients=${patientsKey}`, `gateway=${gatewayKey}`]),
    })
    const principal = testPrincipal()
    const own = signEvent(domainEvent('patient.created', patientData(), { principal }), patientsKey)
    // The gateway's key on a patients event: a compromised gateway posing as patients.
    const posing = signEvent(domainEvent('patient.created', patientData(), { principal }), gatewayKey)
    for (const e of [posing, own])
      await amqp.sendToQueue(queue, Buffer.from(JSON.stringify(e)), { messageId: e.id })
    await waitFor(() => countEvents(knex, principal.companyId), { timeoutMs: 30_000, what: 'the own event' })
    await amqp.withChannel((ch) =>
      waitFor(async () => (await ch.checkQueue(`${queue}.dlq`)).messageCount === 1, {
        timeoutMs: 30_000,
        what: 'one dead letter',
      }),
    )
    expect((await eventsOf(knex, principal.companyId, (q) => q.select('id'))).map((r) => r.id)).toEqual([
      own.id,
    ])
    expect(await metrics.getSingleMetricAsString('events_refused_total')).toContain(
      `events_refused_total{queue="${queue}",reason="bad_signature",service="audit"} 1`,
    )
  })
})
