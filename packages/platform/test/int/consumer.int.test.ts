import { execFile } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { promisify } from 'node:util'
import type { Knex } from 'knex'
import {
  Amqp,
  PARKED_HEADER,
  PARKED_KEY_HEADER,
  PARKED_USER_HEADER,
  QUORUM_DELIVERY_LIMIT,
  attemptOf,
  eventOrigins,
  startConsumer,
  type CloudEvent,
  type Consumer,
  type ConsumerOptions,
} from '@clinic/platform'
import { declareWorkQueue, freshCompanyId, waitFor } from '@clinic/platform/testing'
import {
  createBrokerUsers,
  newBrokerPrefix,
  removeBrokerUsers,
  stackAmqpUrl,
} from '@clinic/platform/broker-users'
import { Registry } from 'prom-client'
import { amqpUrl, rawChannel, schemaName, testEvent, testLog, testSchema } from './helpers'

jest.setTimeout(30_000)

const log = testLog('consumer')
let db: Awaited<ReturnType<typeof testSchema>>
let knex: Knex
let amqp: Amqp
let raw: Awaited<ReturnType<typeof rawChannel>>
const consumers: Consumer[] = []
const queues: string[] = []
const extraAmqp: Amqp[] = []

beforeAll(async () => {
  db = await testSchema(20)
  knex = db.knex
  amqp = new Amqp({ url: amqpUrl(), log, name: 'platform-consumer-test' })
  await amqp.start()
  raw = await rawChannel()
})

afterAll(async () => {
  await Promise.all(consumers.map((c) => c.stop()))
  await Promise.all([amqp, ...extraAmqp].map((a) => a.close()))
  for (const q of queues) {
    for (const n of [q, `${q}.wait`, `${q}.dlq`]) await raw.ch.deleteQueue(n).catch(() => undefined)
    for (const x of [`${q}.wait`, `${q}.back`]) await raw.ch.deleteExchange(x).catch(() => undefined)
  }
  await raw?.close()
  await db?.drop()
})

/**
 * A consumer on a queue of its own, declared as topology.cjs declares every work queue (a failed
 * attempt waits 50 ms); without bindings, the test sends straight to the queue.
 */
async function consume(
  {
    bindings = [],
    queueType,
    ...o
  }: Partial<ConsumerOptions> &
    Pick<ConsumerOptions, 'handle'> & {
      bindings?: string[]
      queueType?: 'classic' | 'quorum'
    },
  queue = `${schemaName()}.q`,
) {
  if (!queues.includes(queue)) {
    queues.push(queue)
    await declareWorkQueue(amqpUrl(), queue, bindings, { retryDelayMs: 50, queueType })
  }
  const c = await startConsumer({ amqp, knex, log, queue, ...o })
  consumers.push(c)
  return { queue, consumer: c }
}

// Straight into the queue (the harness's guest may write to amq.default; no service user may).
const send = (queue: string, e: CloudEvent | string) =>
  amqp.publishTo('', queue, Buffer.from(typeof e === 'string' ? e : JSON.stringify(e)), {
    messageId: typeof e === 'string' ? undefined : e.id,
    contentType: 'application/cloudevents+json',
  })

const count = async (table: string, where: Record<string, unknown>) =>
  Number((await knex(table).where(where).count({ n: '*' }))[0]!.n)
const ready = async (queue: string) => (await raw.ch.checkQueue(queue)).messageCount

async function effect(trx: Knex.Transaction, e: CloudEvent, note = 'done') {
  await trx('effects').insert({ event_id: e.id, idempresa: e.idempresa, note })
}

describe('startConsumer', () => {
  it('commits the effect and the processed_events row together, through the exchange binding', async () => {
    const company = freshCompanyId()
    const { queue } = await consume({
      bindings: ['appointment.checked_in'],
      handle: async (e, trx) => {
        if (e.idempresa === company) await effect(trx, e) // the run's vhost is shared
      },
    })
    const e = testEvent(company)
    await amqp.publish([e])
    await waitFor(async () => (await count('effects', { event_id: e.id })) === 1, { what: 'the effect' })
    expect(await count('processed_events', { event_id: e.id })).toBe(1)
    await waitFor(async () => (await ready(queue)) === 0)
  })

  it('rolls back the effect of a failed attempt with its processed_events row, and retries', async () => {
    const company = freshCompanyId()
    const attempts: number[] = []
    const seenInFailure: number[] = []
    const { queue } = await consume({
      maxAttempts: 5,
      handle: async (e, trx) => {
        attempts.push(attempts.length + 1)
        await effect(trx, e, `attempt ${attempts.length}`)
        if (attempts.length < 3) {
          // Inside the failing transaction the row exists; after it, it must not.
          seenInFailure.push(
            await trx('processed_events')
              .where({ event_id: e.id })
              .count({ n: '*' })
              .then((r) => Number(r[0]!.n)),
          )
          throw new Error('transient failure')
        }
      },
    })
    const e = testEvent(company)
    await send(queue, e)
    await waitFor(async () => (await count('processed_events', { event_id: e.id })) === 1, {
      what: 'a successful attempt',
    })
    expect(attempts).toEqual([1, 2, 3])
    expect(seenInFailure).toEqual([1, 1])
    // Only the successful attempt's effect is left.
    expect(await knex('effects').where({ event_id: e.id }).pluck('note')).toEqual(['attempt 3'])
    await waitFor(async () => (await ready(queue)) === 0 && (await ready(`${queue}.wait`)) === 0)
    expect(await ready(`${queue}.dlq`)).toBe(0)
  })

  it('handles an event delivered twice once', async () => {
    const company = freshCompanyId()
    const calls: string[] = []
    // prefetch 1: messages are handled in order, so once the marker is done both copies are.
    const { queue } = await consume({
      prefetch: 1,
      handle: async (e, trx) => {
        calls.push(e.id)
        await effect(trx, e)
      },
    })
    const e = testEvent(company)
    const marker = testEvent(company)
    await send(queue, e)
    await send(queue, e)
    await send(queue, marker)
    await waitFor(async () => (await count('effects', { event_id: marker.id })) === 1, { what: 'the marker' })
    expect(calls).toEqual([e.id, marker.id])
    expect(await count('effects', { event_id: e.id })).toBe(1)
    await waitFor(async () => (await ready(queue)) === 0)
    expect(await ready(`${queue}.wait`)).toBe(0)
  })

  it('handles copies delivered at the same time once (the processed_events row is the lock)', async () => {
    const company = freshCompanyId()
    let calls = 0
    const { queue, consumer } = await consume({
      prefetch: 16,
      handle: async (e, trx) => {
        calls++
        await effect(trx, e)
      },
    })
    const e = testEvent(company)
    await Promise.all(Array.from({ length: 6 }, () => send(queue, e)))
    await waitFor(async () => (await count('effects', { event_id: e.id })) === 1)
    await waitFor(async () => (await ready(queue)) === 0, { what: 'every copy delivered' })
    await consumer.stop() // waits for the copies in hand
    expect(calls).toBe(1)
    expect(await count('effects', { event_id: e.id })).toBe(1)
    // Every copy was acked: none came back to the queue when the channel closed.
    expect(await ready(queue)).toBe(0)
    expect(await ready(`${queue}.wait`)).toBe(0)
  })

  it('dead-letters an event that always fails after maxAttempts, without looping', async () => {
    const company = freshCompanyId()
    let calls = 0
    const { queue } = await consume({
      maxAttempts: 3,
      handle: async (e, trx) => {
        calls++
        await effect(trx, e)
        throw new Error('permanent failure')
      },
    })
    const e = testEvent(company)
    await send(queue, e)
    await waitFor(async () => (await ready(`${queue}.dlq`)) === 1, { what: 'the dead letter' })
    const dead = await raw.ch.get(`${queue}.dlq`, { noAck: true })
    expect(dead).not.toBe(false)
    if (!dead) return
    expect(JSON.parse(dead.content.toString('utf8'))).toEqual(e)
    // Parked after its third attempt: the broker counted the two rejections before it.
    expect(dead.properties.headers?.[PARKED_HEADER]).toBe('failed')
    expect(attemptOf(dead, queue)).toBe(3)
    expect(calls).toBe(3)
    expect(await count('effects', { event_id: e.id })).toBe(0)
    expect(await count('processed_events', { event_id: e.id })).toBe(0)
    expect(await ready(queue)).toBe(0)
    expect(await ready(`${queue}.wait`)).toBe(0)
  })

  it('spends no attempt while the database is away: held, requeued, committed once it is back', async () => {
    const company = freshCompanyId()
    let calls = 0
    const { queue } = await consume({
      maxAttempts: 2,
      maxHoldMs: 20,
      handle: async (e, trx) => {
        calls++
        // What pg and knex throw while the database is cut off, five times over.
        if (calls <= 5) throw new Error('insert into "effects" - Connection terminated unexpectedly')
        await effect(trx, e)
      },
    })
    const e = testEvent(company)
    await send(queue, e)
    await waitFor(async () => (await count('effects', { event_id: e.id })) === 1, { what: 'the effect' })
    expect(calls).toBe(6)
    expect(await count('processed_events', { event_id: e.id })).toBe(1)
    expect(await ready(`${queue}.dlq`)).toBe(0)
    expect(await ready(`${queue}.wait`)).toBe(0)
  })

  it('on quorum queues (RabbitMQ 4): retried, dead-lettered, and held past 20 redeliveries without a dead letter', async () => {
    const company = freshCompanyId()
    const queue = `${schemaName()}.quorum`
    let held = 0
    await consume(
      {
        queueType: 'quorum',
        maxAttempts: 2,
        maxHoldMs: 5,
        handle: async (e, trx) => {
          // 25 hand-backs (RabbitMQ 4's default quorum limit is 20), then one failure, then done.
          if (e.subject === 'held' && held++ < 25) throw new Error('Connection terminated unexpectedly')
          if (e.subject === 'poison') throw new Error('always fails')
          await effect(trx, e)
        },
      },
      queue,
    )
    const kept = { ...testEvent(company), subject: 'held' }
    const poison = { ...testEvent(company), subject: 'poison' }
    await send(queue, kept)
    await send(queue, poison)
    await waitFor(async () => (await count('effects', { event_id: kept.id })) === 1, { what: 'the effect' })
    await waitFor(async () => (await ready(`${queue}.dlq`)) === 1, { what: 'the poison dead-lettered' })
    const dead = await raw.ch.get(`${queue}.dlq`, { noAck: true })
    expect(dead && JSON.parse(dead.content.toString('utf8')).id).toBe(poison.id)
    // The broker declared them quorum queues, with the delivery limit far above what holds cost.
    const { stdout } = await promisify(execFile)('rabbitmqctl', [
      'list_queues',
      '-q',
      '--formatter',
      'json',
      '-p',
      new URL(amqpUrl()).pathname.slice(1),
      'name',
      'type',
      'arguments',
    ])
    const listed = // rabbitmqctl lists arguments as [name, AMQP type, value] triples.
      (
        JSON.parse(stdout) as Array<{
          name: string
          type: string
          arguments: Array<[string, string, unknown]>
        }>
      ).filter((q) => q.name.startsWith(queue))
    expect(Object.fromEntries(listed.map((q) => [q.name, q.type]))).toEqual({
      [queue]: 'quorum',
      [`${queue}.dlq`]: 'quorum',
      [`${queue}.wait`]: 'quorum',
    })
    const args = (name: string) =>
      Object.fromEntries(listed.find((q) => q.name === name)!.arguments.map(([k, , v]) => [k, v]))
    expect(args(queue)).toMatchObject({
      'x-delivery-limit': QUORUM_DELIVERY_LIMIT,
      // The broker keeps a rejected message until its wait queue has it, and back.
      'x-dead-letter-strategy': 'at-least-once',
      'x-dead-letter-exchange': `${queue}.wait`,
    })
    expect(args(`${queue}.wait`)).toMatchObject({
      'x-dead-letter-strategy': 'at-least-once',
      'x-dead-letter-exchange': `${queue}.back`,
      'x-message-ttl': 50,
    })
  })

  it.each([
    ['not JSON', '{"specversion": "1.0", '],
    ['a broken envelope', JSON.stringify({ specversion: '1.0', id: 'nope', type: 'x', data: {} })],
  ])('parks %s at once, without calling the handler', async (_what, content) => {
    let calls = 0
    const { queue } = await consume({
      handle: async () => {
        calls++
      },
    })
    await send(queue, content)
    await waitFor(async () => (await ready(`${queue}.dlq`)) === 1, { what: 'the dead letter' })
    const dead = await raw.ch.get(`${queue}.dlq`, { noAck: true })
    expect(dead && dead.content.toString('utf8')).toBe(content)
    expect(dead && dead.properties.headers?.[PARKED_HEADER]).toBe('malformed')
    expect(calls).toBe(0)
    expect(await ready(`${queue}.wait`)).toBe(0)
  })

  it('in batches: one transaction for many events, a duplicate once, a poison event alone', async () => {
    const company = freshCompanyId()
    const batches: number[] = []
    const poison = testEvent(company)
    // The queue is filled before the consumer starts, so how the events group into batches does
    // not depend on how fast this busy machine sends them.
    const queue = `${schemaName()}.batched`
    await (await consume({ handle: async () => undefined }, queue)).consumer.stop()
    const events = Array.from({ length: 120 }, () => testEvent(company))
    // The poison comes last: its batch (at most `size` events) is the only one handled one by one.
    for (const e of [...events.slice(0, 60), events[0]!, ...events.slice(60), poison]) await send(queue, e)
    await consume(
      {
        prefetch: 100,
        maxAttempts: 2,
        handle: async (e, trx) => {
          if (e.id === poison.id) throw new Error('poison')
          await effect(trx, e, 'one by one')
        },
        batch: {
          size: 50,
          lingerMs: 20,
          handle: async (events, trx) => {
            batches.push(events.length)
            if (events.some((e) => e.id === poison.id)) throw new Error('poison in the batch')
            for (const e of events) await effect(trx, e, 'batched')
          },
        },
      },
      queue,
    )
    await waitFor(async () => (await ready(`${queue}.dlq`)) === 1, { what: 'the poison dead-lettered' })
    await waitFor(async () => (await count('effects', { idempresa: company })) === 120, {
      what: 'every good event',
    })
    const dead = await raw.ch.get(`${queue}.dlq`, { noAck: true })
    expect(dead && JSON.parse(dead.content.toString('utf8')).id).toBe(poison.id)
    // Each good event once (the duplicate too), most of them in batches.
    const rows = await knex('effects').where({ idempresa: company }).select('event_id', 'note')
    expect(rows).toHaveLength(120)
    expect(new Set(rows.map((r) => r.event_id))).toEqual(new Set(events.map((e) => e.id)))
    // Only the poison's batch, 50 messages at most, went one by one.
    expect(rows.filter((r) => r.note === 'batched').length).toBeGreaterThanOrEqual(70)
    expect(batches.length).toBeLessThan(20)
    expect(await count('processed_events', { event_id: poison.id })).toBe(0)
  })

  it('acks each batch whole once its messages are the oldest in hand: after a poison first, every message settled once', async () => {
    const company = freshCompanyId()
    const poison = testEvent(company)
    const queue = `${schemaName()}.batched-acks`
    await (await consume({ handle: async () => undefined }, queue)).consumer.stop()
    const events = Array.from({ length: 150 }, () => testEvent(company))
    // The poison first: its batch goes one by one (a retry, then the dead-letter queue) while later
    // messages wait in hand; the batches after it are acked with one frame each.
    for (const e of [poison, ...events.slice(0, 100), events[5]!, ...events.slice(100)]) await send(queue, e)
    const batches: number[] = []
    const { consumer } = await consume(
      {
        prefetch: 120,
        maxAttempts: 2,
        handle: async (e, trx) => {
          if (e.id === poison.id) throw new Error('poison')
          await effect(trx, e, 'one by one')
        },
        batch: {
          size: 40,
          lingerMs: 20,
          handle: async (list, trx) => {
            batches.push(list.length)
            if (list.some((e) => e.id === poison.id)) throw new Error('poison in the batch')
            for (const e of list) await effect(trx, e, 'batched')
          },
        },
      },
      queue,
    )
    await waitFor(async () => (await ready(`${queue}.dlq`)) === 1, { what: 'the poison dead-lettered' })
    await waitFor(async () => (await count('effects', { idempresa: company })) === 150, {
      what: 'every good event',
    })
    // Stopped, the consumer hands back what it did not ack: nothing, and nothing was acked unhandled.
    await consumer.stop()
    consumers.splice(consumers.indexOf(consumer), 1)
    expect(await ready(queue)).toBe(0)
    expect(await ready(`${queue}.wait`)).toBe(0)
    const rows = await knex('effects').where({ idempresa: company }).select('event_id')
    expect(rows).toHaveLength(150)
    expect(new Set(rows.map((r) => r.event_id))).toEqual(new Set(events.map((e) => e.id)))
    expect(batches.length).toBeGreaterThan(2)
  })

  it('lets two consumers (replicas) on one queue share the work without duplicates', async () => {
    const company = freshCompanyId()
    const queue = `${schemaName()}.shared`
    const byReplica = { a: [] as string[], b: [] as string[] }
    const second = new Amqp({ url: amqpUrl(), log, name: 'platform-consumer-test-b' })
    extraAmqp.push(second)
    await second.start()
    const handle = (replica: 'a' | 'b') => async (e: CloudEvent, trx: Knex.Transaction) => {
      await effect(trx, e, replica)
      byReplica[replica].push(e.id)
    }
    await consume({ handle: handle('a'), prefetch: 4 }, queue)
    consumers.push(await startConsumer({ amqp: second, knex, log, queue, prefetch: 4, handle: handle('b') }))
    const events = Array.from({ length: 100 }, () => testEvent(company))
    await Promise.all(events.map((e) => send(queue, e)))
    await waitFor(async () => (await count('effects', { idempresa: company })) === events.length, {
      what: 'every event handled',
    })
    expect(byReplica.a.length).toBeGreaterThan(0)
    expect(byReplica.b.length).toBeGreaterThan(0)
    const all = [...byReplica.a, ...byReplica.b]
    expect(all).toHaveLength(events.length)
    expect(new Set(all)).toEqual(new Set(events.map((e) => e.id)))
    await waitFor(async () => (await ready(queue)) === 0)
  })
})

describe('startConsumer with origins (the broker says who published)', () => {
  // Broker users of this run only, with deploy's permissions (packages/platform/broker-users.cjs).
  const prefix = newBrokerPrefix()
  const rootSecret = randomBytes(16).toString('hex')
  let appointments: Amqp
  const metrics = new Registry()

  beforeAll(async () => {
    await createBrokerUsers({ amqpUrl: amqpUrl(), prefix, rootSecret, withTopology: false })
    appointments = new Amqp({
      url: stackAmqpUrl(amqpUrl(), 'appointments', { prefix, rootSecret }),
      log,
      name: 'platform-consumer-appointments',
    })
    extraAmqp.push(appointments)
    await appointments.start()
  })
  afterAll(async () => {
    await removeBrokerUsers({ prefix })
  })

  // appointment.created: no other consumer of this file takes it (they share processed_events).
  const appointmentEvent = (company: number) =>
    ({ ...testEvent(company), source: 'clinic/appointments', type: 'appointment.created' }) as CloudEvent
  const refused = async (reason: string) =>
    (await metrics.getSingleMetric('events_refused_total')?.get())?.values.find(
      (v) => v.labels.reason === reason,
    )?.value ?? 0

  it("handles its source's event, also after a retry; dead-letters the others, counted by reason", async () => {
    const company = freshCompanyId()
    const handled: string[] = []
    let failures = 0
    const { queue } = await consume({
      bindings: ['appointment.*'],
      origins: eventOrigins(prefix),
      metrics,
      handle: async (e, trx) => {
        if (e.idempresa !== company) return
        // The first attempt fails: the retried copy must still pass as appointments'.
        if (failures++ === 0) throw new Error('transient failure')
        handled.push(e.id)
        await effect(trx, e)
      },
    })
    const own = appointmentEvent(company)
    await appointments.publish([own])
    await waitFor(async () => (await count('effects', { event_id: own.id })) === 1, {
      what: "appointments' event, after its retry",
    })
    expect(failures).toBe(2)

    // Published as someone else (the harness's guest), as itself under a key not its type.
    const asGuest = appointmentEvent(company)
    await amqp.publish([asGuest])
    const wrongKey = appointmentEvent(company)
    await appointments.publishRaw([
      { id: wrongKey.id, type: 'appointment.updated', body: Buffer.from(JSON.stringify(wrongKey)) },
    ])
    await waitFor(async () => (await ready(`${queue}.dlq`)) === 2, { what: 'two dead letters' })
    // Parked with why, and what the broker said of each (the user it came as, its routing key).
    const parked = [
      await raw.ch.get(`${queue}.dlq`, { noAck: true }),
      await raw.ch.get(`${queue}.dlq`, { noAck: true }),
    ]
    expect(
      parked
        .map(
          (m) =>
            m && [
              m.properties.messageId,
              m.properties.headers?.[PARKED_HEADER],
              m.properties.headers?.[PARKED_USER_HEADER],
              m.properties.headers?.[PARKED_KEY_HEADER],
            ],
        )
        .sort(),
    ).toEqual(
      [
        [asGuest.id, 'wrong_user', 'guest', 'appointment.created'],
        [wrongKey.id, 'routing_key_mismatch', appointments.user, 'appointment.updated'],
      ].sort(),
    )
    expect(await refused('wrong_user')).toBe(1)
    expect(await refused('routing_key_mismatch')).toBe(1)
    expect(handled).toEqual([own.id])
    expect(await count('effects', { event_id: asGuest.id })).toBe(0)
  })
})
