import type { Knex } from 'knex'
import { accessBatch, uuidv7, type Amqp, type CloudEvent, type Consumer } from '@clinic/platform'
import { declareWorkQueue, gatewayHeaders, testPrincipal, waitFor } from '@clinic/platform/testing'
import { auditTrailRepository, chainReader } from '../../src/db/repositories/audit-events-repository'
import { verifyCompany } from '../../src/domain/verify-company'
import { startAuditConsumer } from '../../src/events/consumer'
import { domainEvent, httpEvent, patientData } from '../helpers'
import {
  amqpUrl,
  brokerUsersOfFile,
  buildTestApp,
  chainKey,
  connectAmqp,
  countEvents,
  eventsOf,
  log,
  migrateAudit,
  writerDb,
} from './setup'

// A loaded machine (2 cores, parallel projects) can take seconds to deliver; waitFor bounds each wait.
jest.setTimeout(60_000)

let knex: Knex
let amqp: Amqp
const users = brokerUsersOfFile()
/** Each event as its source's broker user publishes it. */
const publish = (events: CloudEvent[]) => users.publish(events)
const stops: Array<() => Promise<unknown>> = []
const queueName = () => `audit.events.test.${uuidv7()}`

beforeAll(async () => {
  await migrateAudit()
  knex = writerDb()
  await users.create()
  amqp = await connectAmqp()
})
afterEach(async () => {
  for (const stop of stops.splice(0).reverse()) await stop()
})
afterAll(async () => {
  await users.remove()
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
  bindings?: string[]
}): Promise<Consumer> {
  // Declared as the broker's topology declares audit.events (every event unless a test says).
  await declareWorkQueue(amqpUrl(), o.queue, o.bindings ?? ['#'], { retryDelayMs: 50 })
  const c = await startAuditConsumer({
    amqp: o.amqp ?? amqp,
    knex: o.knex ?? knex,
    log,
    queue: o.queue,
    prefetch: o.prefetch,
    origins: users.origins,
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
    await publish([event])
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
    await publish(events)
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
    await publish([batch])
    await publish([batch]) // as after a relay that crashed before deleting its row
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
    await consumer({ queue, bindings: ['http.batch'] })
    const principal = testPrincipal()
    // Published by the gateway's user, but one entry claims to be a patients event.
    const smuggled = accessBatch([
      httpEvent(principal),
      domainEvent('patient.created', patientData(), { principal }) as never,
    ])
    const miscounted = accessBatch([httpEvent(principal)])
    miscounted.data.count = 2
    const sentinelOwner = testPrincipal()
    const sentinel = accessBatch([httpEvent(sentinelOwner)])
    await publish([smuggled, miscounted, sentinel])
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
    await publish([event])
    await publish([event])
    await publish([sentinel])
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
      await publish([...batch, ...batch.reverse()])
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

  it("refuses events not published by their source's broker user into the dead-letter queue, and counts them", async () => {
    const queue = queueName()
    const { metrics } = await testApp()
    await consumer({ queue, metrics, bindings: ['patient.created', 'http.batch'] })
    const principal = testPrincipal()
    const own = domainEvent('patient.created', patientData(), { principal })
    // The harness's own user (as anyone else on the vhost), and the gateway posing as patients under
    // a key of its own, and claiming as itself a type it does not emit.
    const asGuest = domainEvent('patient.created', patientData(), { principal })
    const posing = domainEvent('patient.created', patientData(), { principal })
    const notEmitted = {
      ...domainEvent('patient.created', patientData(), { principal }),
      source: 'clinic/gateway',
    }
    const gateway = await users.as('gateway')
    await amqp.publish([asGuest])
    for (const e of [posing, notEmitted])
      await gateway.publishRaw([{ id: e.id, type: 'http.batch', body: Buffer.from(JSON.stringify(e)) }])
    await publish([own])
    await waitFor(() => countEvents(knex, principal.companyId), { timeoutMs: 30_000, what: 'the own event' })

    const forged = [asGuest.id, posing.id, notEmitted.id].sort()
    const dead = await amqp.withChannel(async (ch) => {
      const ids: string[] = []
      await waitFor(
        async () => {
          for (
            let m = await ch.get(`${queue}.dlq`, { noAck: true });
            m;
            m = await ch.get(`${queue}.dlq`, { noAck: true })
          )
            ids.push((JSON.parse(m.content.toString('utf8')) as { id: string }).id)
          return forged.every((id) => ids.includes(id))
        },
        { timeoutMs: 30_000, what: 'three dead letters' },
      )
      await ch.deleteQueue(`${queue}.dlq`)
      return ids
    })
    expect(dead.filter((id) => forged.includes(id)).sort()).toEqual(forged)
    const rows = (await eventsOf(knex, principal.companyId, (q) => q.select('id'))).map((r) => r.id)
    expect(rows).toEqual([own.id])
    const counted = await metrics.getSingleMetricAsString('events_refused_total')
    expect(counted).toContain(`events_refused_total{queue="${queue}",reason="wrong_user",service="audit"} 2`)
    expect(counted).toContain(
      `events_refused_total{queue="${queue}",reason="type_not_emitted",service="audit"} 1`,
    )
  })
})
