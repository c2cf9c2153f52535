import type { Knex } from 'knex'
import { Amqp, EXCHANGE, OutboxRelay, enqueueEvents } from '@clinic/platform'
import { createDb } from '@clinic/platform/db'
import { freshCompanyId, waitFor } from '@clinic/platform/testing'
import { amqpUrl, databaseUrl, eventTap, testEvent, testLog, testSchema } from './helpers'

jest.setTimeout(30_000)

const log = testLog('outbox')
let db: Awaited<ReturnType<typeof testSchema>>
let knex: Knex
let amqp: Amqp
let tap: Awaited<ReturnType<typeof eventTap>>
const relays: OutboxRelay[] = []
const extraAmqp: Amqp[] = []

function relay(o: { amqp?: Amqp; pollMs?: number; batchSize?: number } = {}) {
  const r = new OutboxRelay({
    knex,
    schema: db.schema,
    databaseUrl: databaseUrl(),
    amqp: o.amqp ?? amqp,
    log,
    pollMs: o.pollMs ?? 60_000,
    batchSize: o.batchSize,
  })
  relays.push(r)
  return r
}

const unpublished = async (ids: string[]) =>
  Number((await knex('outbox').whereIn('event_id', ids).whereNull('published_at').count({ n: '*' }))[0]!.n)

beforeAll(async () => {
  db = await testSchema()
  knex = db.knex
  amqp = new Amqp({ url: amqpUrl(), log, name: 'platform-outbox-test' })
  await amqp.start()
  tap = await eventTap()
})

afterAll(async () => {
  await Promise.all(relays.map((r) => r.stop()))
  await Promise.all([amqp, ...extraAmqp].map((a) => a.close()))
  await tap?.close()
  await db?.drop()
})

describe('OutboxRelay', () => {
  let main: OutboxRelay

  beforeAll(async () => {
    // A poll far beyond the test's timeout: only LISTEN/NOTIFY can wake this relay in time.
    main = relay({ pollMs: 60_000 })
    await main.start()
  })

  it('publishes events of a committed transaction with confirms and marks them published', async () => {
    const company = freshCompanyId()
    const events = [testEvent(company), testEvent(company), testEvent(company)]
    await knex.transaction(async (trx) => {
      await trx('things').insert({ idempresa: company, name: 'the change' })
      await enqueueEvents(trx, events)
    })
    const ids = events.map((e) => e.id)
    await waitFor(() => tap.idsFor(company).length >= 3, { what: 'three events on the test queue' })
    expect(tap.idsFor(company)).toEqual(ids) // in commit order, once each
    await waitFor(async () => (await unpublished(ids)) === 0, { what: 'rows marked published' })

    const received = tap.messages.filter((m) => m.event.idempresa === company)
    expect(received[0]!.event).toEqual(events[0])
    const { fields, properties } = received[0]!.msg
    expect(fields.exchange).toBe(EXCHANGE)
    expect(fields.routingKey).toBe('appointment.checked_in')
    expect(properties).toMatchObject({
      messageId: events[0]!.id,
      type: 'appointment.checked_in',
      contentType: 'application/cloudevents+json',
      deliveryMode: 2,
    })
    // Published rows are deleted (no dead rows left behind by updates).
    expect(await knex('outbox').whereIn('event_id', ids)).toEqual([])
  })

  it('publishes nothing from a rolled back transaction', async () => {
    const company = freshCompanyId()
    const lost = testEvent(company)
    await expect(
      knex.transaction(async (trx) => {
        await enqueueEvents(trx, [lost])
        throw new Error('the change failed')
      }),
    ).rejects.toThrow('the change failed')
    // The relay publishes in outbox order: once a later event is through, the first would be too.
    const marker = testEvent(company)
    await knex.transaction((trx) => enqueueEvents(trx, [marker]))
    await waitFor(() => tap.idsFor(company).includes(marker.id), { what: 'the marker event' })
    expect(tap.idsFor(company)).toEqual([marker.id])
    expect(await knex('outbox').where({ event_id: lost.id }).first()).toBeUndefined()
  })

  it('enqueues nothing for an empty list', async () => {
    const before = await knex('outbox').count({ n: '*' })
    await knex.transaction((trx) => enqueueEvents(trx, []))
    expect(await knex('outbox').count({ n: '*' })).toEqual(before)
  })

  it('keeps rows pending while the broker is unreachable', async () => {
    const offline = new Amqp({ url: amqpUrl(), log, name: 'never-started' })
    extraAmqp.push(offline)
    const company = freshCompanyId()
    await main.stop() // only the relay under test may touch these rows
    const e = testEvent(company)
    await knex.transaction((trx) => enqueueEvents(trx, [e]))
    const r = relay({ amqp: offline })
    expect(offline.connected).toBe(false)
    expect(await r.drain()).toBe(0)
    expect(await unpublished([e.id])).toBe(1)
    expect(await r.pending()).toBeGreaterThanOrEqual(1)
    // Once connected, the same rows go out.
    await offline.start()
    expect(await r.drain()).toBeGreaterThanOrEqual(1)
    expect(await unpublished([e.id])).toBe(0)
    await waitFor(() => tap.idsFor(company).includes(e.id), { what: 'the pending event' })
  })

  it("commits a pass without waiting for the disk, and leaves its connection's later commits durable", async () => {
    const company = freshCompanyId()
    await main.stop() // only the relay under test may touch these rows
    // One connection: the relay's pass and the check after it share it.
    const one = createDb(databaseUrl(), { schema: db.schema, poolMax: 1 })
    try {
      const e = testEvent(company)
      await enqueueEvents(one, [e])
      const r = new OutboxRelay({ knex: one, schema: db.schema, databaseUrl: databaseUrl(), amqp, log })
      const modes: unknown[] = []
      const onResponse = (response: { rows?: Array<{ commit_mode?: unknown }> }) =>
        response.rows?.forEach((row) => 'commit_mode' in row && modes.push(row.commit_mode))
      one.on('query-response', onResponse)
      expect(await r.drain()).toBeGreaterThanOrEqual(1)
      one.off('query-response', onResponse)
      expect(modes.length).toBeGreaterThanOrEqual(1)
      expect(new Set(modes)).toEqual(new Set(['off']))
      const { rows } = await one.raw<{ rows: Array<{ synchronous_commit: string }> }>(
        'SHOW synchronous_commit',
      )
      expect(rows[0]!.synchronous_commit).toBe('on')
      await waitFor(() => tap.idsFor(company).includes(e.id), { what: 'the event' })
    } finally {
      await one.destroy()
    }
  })

  it('keeps the rows of a batch whose publish failed (taken and deleted in one statement, rolled back)', async () => {
    const company = freshCompanyId()
    await main.stop() // only the relays under test may touch these rows
    const events = [testEvent(company), testEvent(company)]
    await knex.transaction((trx) => enqueueEvents(trx, events))
    // The broker refuses the batch (a nack, a channel closed mid-publish): the real client, its
    // publish failing once.
    const refusing = Object.create(amqp) as Amqp
    refusing.publishRaw = () => Promise.reject(new Error('nacked by the broker'))
    await expect(relay({ amqp: refusing }).drain()).rejects.toThrow('nacked by the broker')
    expect(await unpublished(events.map((e) => e.id))).toBe(2)
    expect(await relay().drain()).toBeGreaterThanOrEqual(2)
    expect(await unpublished(events.map((e) => e.id))).toBe(0)
    await waitFor(() => tap.idsFor(company).length === 2, { what: 'both events, once each' })
    expect(tap.idsFor(company)).toEqual(events.map((e) => e.id))
  })

  it('publishes each event exactly once with two relays on the same outbox (SKIP LOCKED)', async () => {
    const company = freshCompanyId()
    const [amqpA, amqpB] = [
      new Amqp({ url: amqpUrl(), log, name: 'relay-a' }),
      new Amqp({ url: amqpUrl(), log, name: 'relay-b' }),
    ]
    extraAmqp.push(amqpA, amqpB)
    await Promise.all([amqpA.start(), amqpB.start()])
    const events = Array.from({ length: 200 }, () => testEvent(company))
    for (let i = 0; i < events.length; i += 20) {
      await knex.transaction((trx) => enqueueEvents(trx, events.slice(i, i + 20)))
    }
    const a = relay({ amqp: amqpA, batchSize: 5 })
    const b = relay({ amqp: amqpB, batchSize: 5 })
    const [sentA, sentB] = await Promise.all([a.drain(), b.drain()])
    // Both took part, and together they sent every row once.
    expect(sentA).toBeGreaterThan(0)
    expect(sentB).toBeGreaterThan(0)
    expect(sentA + sentB).toBeGreaterThanOrEqual(events.length)
    const ids = events.map((e) => e.id)
    expect(await unpublished(ids)).toBe(0)

    // A marker per connection: messages of one channel arrive in order, so after both markers
    // every copy either relay published has arrived.
    const markers = [testEvent(company), testEvent(company)]
    await amqpA.publish([markers[0]!])
    await amqpB.publish([markers[1]!])
    await waitFor(() => markers.every((m) => tap.idsFor(company).includes(m.id)), { what: 'both markers' })
    const got = tap.idsFor(company).filter((id) => !markers.some((m) => m.id === id))
    expect(got).toHaveLength(events.length)
    expect(new Set(got)).toEqual(new Set(ids))
    expect(sentA + sentB).toBe(events.length)
  })
})
