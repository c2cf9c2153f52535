import type { Knex } from 'knex'
import { Amqp, OutboxRelay, enqueueEvents, startConsumer, type Consumer } from '@clinic/platform'
import { declareWorkQueue, freshCompanyId, waitFor } from '@clinic/platform/testing'
import {
  amqpUrl,
  brokerProxy,
  databaseUrl,
  eventTap,
  rawChannel,
  schemaName,
  testEvent,
  testLog,
  testSchema,
} from './helpers'

/**
 * A broker outage delays events and loses none (DESIGN.md section 5). The service's AMQP client
 * reaches RabbitMQ through a local TCP proxy that the test cuts and restores; the broker itself
 * keeps running for everyone else.
 */
jest.setTimeout(30_000)

const log = testLog('outage')
let db: Awaited<ReturnType<typeof testSchema>>
let knex: Knex
let proxy: Awaited<ReturnType<typeof brokerProxy>>
let amqp: Amqp
let relay: OutboxRelay
let consumer: Consumer
let tap: Awaited<ReturnType<typeof eventTap>>
const queue = `${schemaName()}.outage`
const company = freshCompanyId()
const handled: string[] = []
let writing = false
let writer: Promise<void> = Promise.resolve()

beforeAll(async () => {
  db = await testSchema()
  knex = db.knex
  proxy = await brokerProxy()
  tap = await eventTap() // straight to the broker: it sees what the relay got out
  amqp = new Amqp({ url: proxy.url, log, name: 'platform-outage-test' })
  await amqp.start()
  relay = new OutboxRelay({ knex, schema: db.schema, databaseUrl: databaseUrl(), amqp, log, pollMs: 100 })
  await relay.start()
  await declareWorkQueue(amqpUrl(), queue, ['appointment.checked_in'], { retryDelayMs: 50 })
  consumer = await startConsumer({
    amqp,
    knex,
    log,
    queue,
    handle: async (event, trx) => {
      if (event.idempresa !== company) return // the run's vhost is shared with other test files
      await trx('effects').insert({ event_id: event.id, idempresa: event.idempresa })
      handled.push(event.id)
    },
  })
})

afterAll(async () => {
  writing = false
  await writer.catch(() => undefined)
  await consumer?.stop()
  await relay?.stop()
  await amqp?.close()
  await proxy?.close()
  await tap?.close()
  const raw = await rawChannel()
  for (const q of [queue, `${queue}.wait`, `${queue}.dlq`]) await raw.ch.deleteQueue(q).catch(() => undefined)
  await raw.close()
  await db?.drop()
})

it('reconnects by itself after the broker is cut off, and every event written meanwhile arrives', async () => {
  const written: string[] = []
  writing = true
  // The service keeps writing (a pair of events per transaction) through the whole outage.
  writer = (async () => {
    while (writing) {
      const events = [testEvent(company), testEvent(company)]
      await knex.transaction((trx) => enqueueEvents(trx, events))
      written.push(...events.map((e) => e.id))
      await new Promise((r) => setImmediate(r))
    }
  })()

  // Flowing before the cut.
  await waitFor(() => tap.idsFor(company).length >= 10 && handled.length >= 10, {
    what: 'events before the cut',
  })

  proxy.cut()
  await waitFor(() => !amqp.connected, { what: 'the client to notice the cut' })
  const writtenAtCut = written.length
  // The client keeps trying and is refused; meanwhile events pile up in the outbox.
  await waitFor(() => proxy.refused >= 2, { timeoutMs: 10_000, what: 'reconnect attempts while cut' })
  await waitFor(() => written.length >= writtenAtCut + 20, { what: 'events written during the outage' })
  expect(await relay.pending()).toBeGreaterThan(0)
  expect(amqp.connected).toBe(false)

  proxy.restore()
  await waitFor(() => amqp.connected, { timeoutMs: 15_000, what: 'the client to reconnect by itself' })
  await waitFor(() => written.length >= writtenAtCut + 40, { what: 'events written after the outage' })
  writing = false
  await writer

  const all = new Set(written)
  await waitFor(() => [...all].every((id) => tap.idsFor(company).includes(id)), {
    timeoutMs: 15_000,
    what: 'every written event on the broker',
  })
  // At least once: repeats are allowed, nothing foreign, nothing missing.
  expect(new Set(tap.idsFor(company))).toEqual(all)
  await waitFor(async () => (await relay.pending()) === 0, { what: 'an empty outbox' })

  // The consumer's channel was set up again on the new connection: it handled everything once.
  await waitFor(
    async () =>
      Number((await knex('effects').where({ idempresa: company }).count({ n: '*' }))[0]!.n) >= all.size,
    {
      timeoutMs: 15_000,
      what: 'the consumer to catch up',
    },
  )
  const effects = await knex('effects').where({ idempresa: company }).select('event_id')
  expect(effects).toHaveLength(all.size)
  expect(new Set(effects.map((e) => e.event_id))).toEqual(all)
  expect(proxy.accepted).toBeGreaterThanOrEqual(2) // the first connection and the reconnection
})

it('keeps trying to connect at start-up until the broker is reachable', async () => {
  const closed = await brokerProxy()
  closed.cut() // refuse from the start
  const late = new Amqp({ url: closed.url, log, name: 'platform-late-start' })
  try {
    let started = false
    const starting = late.start().then(() => (started = true))
    await waitFor(() => closed.refused >= 2, { timeoutMs: 10_000, what: 'refused connection attempts' })
    expect(started).toBe(false)
    expect(late.connected).toBe(false)
    closed.restore()
    await waitFor(() => started, { timeoutMs: 10_000, what: 'start() to resolve' })
    await starting
    expect(late.connected).toBe(true)
    const e = testEvent(company)
    await late.publish([e])
    await waitFor(() => tap.idsFor(company).includes(e.id), { what: 'an event published after a late start' })
  } finally {
    await late.close()
    await closed.close()
  }
})

it('moves to the next node of AMQP_HOSTS when the one it uses goes away (a cluster node stopped)', async () => {
  const [first, second] = [await brokerProxy(), await brokerProxy()]
  const hostOf = (url: string) => new URL(url).host
  const node = new Amqp({
    url: first.url,
    hosts: [hostOf(first.url), hostOf(second.url)],
    log,
    name: 'platform-nodes',
  })
  try {
    await node.start()
    expect([first.accepted, second.accepted]).toEqual([1, 0])
    first.cut() // the node stops: its connections drop and it refuses new ones
    await waitFor(() => node.connected && second.accepted === 1, {
      timeoutMs: 15_000,
      what: 'a connection to the second node',
    })
    const e = testEvent(company)
    await node.publish([e])
    await waitFor(() => tap.idsFor(company).includes(e.id), {
      what: 'an event published through the second node',
    })
  } finally {
    await node.close()
    await first.close()
    await second.close()
  }
})

it('starts over when the broker closes the publishing channel, and publishes again', async () => {
  const own = new Amqp({ url: proxy.url, log, name: 'platform-channel-error' })
  try {
    await own.start()
    const before = proxy.accepted
    // An expiration that is not a number: RabbitMQ closes the channel (406), not the connection.
    await expect(
      own.publishTo('', `${queue}.nowhere`, Buffer.from('x'), { expiration: 'not-a-number' }),
    ).rejects.toThrow(/closed/)
    await waitFor(() => own.connected && proxy.accepted > before, { what: 'a new connection' })
    const e = testEvent(company)
    await own.publish([e])
    await waitFor(() => tap.idsFor(company).includes(e.id), { what: 'the event published afterwards' })
  } finally {
    await own.close()
  }
})
