import type { Channel } from 'amqplib'
import type { Knex } from 'knex'
import type { Logger } from 'pino'
import type { ConsumeMessage } from 'amqplib'
import { RETRY_BACK_KEY, RETRY_DELAY_KEY, assertWorkQueue, retryExchangeOf, type Amqp } from './amqp'
import type { Counter, Registry } from 'prom-client'
import { registryCounter } from './http/metrics'
import { isConnectionError } from './errors'
import { checkOrigin, type DeliveryOrigin, type EventOrigins, type OriginCheck } from './event-origin'
import { parseEvent, type CloudEvent } from './events'
import { Holds, Unsettled, ack, recordFresh, requeue, type Admitted, type Delivery } from './consumer-support'
import { GroupCommit } from './group-commit'

export interface ConsumerOptions {
  amqp: Amqp
  knex: Knex
  log: Logger
  queue: string
  /** Routing keys on `clinic.events` (event types; `#` for all). */
  bindings: string[]
  /** Runs inside the transaction that also records the event id. Throw to retry. */
  handle: (event: CloudEvent, trx: Knex.Transaction) => Promise<void>
  /**
   * When set, messages are handled in batches: up to `size` events (in delivery order, duplicates
   * already dropped) in one transaction with their processed_events rows, then acked together.
   * A batch that fails is handled again one message at a time with `handle`, so a poison message
   * is retried and dead-lettered alone. Give a prefetch of at least twice `size`.
   */
  batch?: {
    size: number
    /** How long the first message of a batch may wait for others. */
    lingerMs: number
    handle: (events: CloudEvent[], trx: Knex.Transaction) => Promise<void>
  }
  prefetch?: number
  /**
   * When set, an event is handled only when the broker vouches for its `source` (event-origin.ts):
   * `user_id` is that source's broker user, the source emits its type, and the routing key is the
   * type. Anything else goes to the dead-letter queue at once (never retried), counted in
   * `events_refused_total{queue, reason}` of `metrics`. Every service's consumer sets it; only
   * tests of the consumer's mechanics leave it out.
   */
  origins?: EventOrigins
  /** The service's registry (`app.metrics`). */
  metrics?: Registry
  maxAttempts?: number
  /** Delay before retry n (1-based), in ms. */
  backoffMs?: (attempt: number) => number
  /** Longest hold of a message while the database is away (default 10 s). */
  maxHoldMs?: number
}

const REFUSED = 'events_refused_total'
/** One counter per registry, shared by the consumers of a process. */
function refusedCounter(metrics: Registry): Counter<'queue' | 'reason'> {
  return registryCounter(metrics, {
    name: REFUSED,
    help: 'Events refused by a consumer (malformed, or not from the broker user of their source), sent to its dead-letter queue',
    labelNames: ['queue', 'reason'],
  })
}

export const ATTEMPT_HEADER = 'x-clinic-attempt'
/**
 * On a retry, the first delivery's `user_id` and routing key: the retried copy goes out as the
 * consumer's own user, through its own retry exchange, which no other service may write to.
 */
export const ORIGIN_USER_HEADER = 'x-clinic-origin-user'
export const ORIGIN_KEY_HEADER = 'x-clinic-origin-routing-key'

export interface Consumer {
  /** Stop taking messages and wait for the ones in hand. */
  stop(): Promise<void>
}

class IdempotentConsumer implements Consumer {
  private readonly maxAttempts: number
  private readonly backoff: (attempt: number) => number
  private readonly maxHoldMs: number
  private readonly refused: Counter<'queue' | 'reason'> | null
  private readonly inFlight = new Set<Promise<void>>()
  private readonly holds = new Holds()
  /** Consecutive failures with the database away; the first success ends the outage. */
  private outage = 0
  private stopping = false
  private channel: Channel | null = null
  private tag: string | null = null
  private batch: GroupCommit<Admitted, void> | null = null
  private readonly unsettled = new Unsettled()

  constructor(private readonly o: ConsumerOptions) {
    this.maxAttempts = o.maxAttempts ?? 5
    this.backoff = o.backoffMs ?? ((n: number) => Math.min(60_000, 1000 * 2 ** (n - 1)))
    this.maxHoldMs = o.maxHoldMs ?? 10_000
    this.refused = o.metrics ? refusedCounter(o.metrics) : null
    if (o.batch)
      this.batch = new GroupCommit(
        async (items) => {
          await this.handleBatch(items)
          return new Array<void>(items.length)
        },
        o.batch.size,
        o.batch.lingerMs,
      )
  }

  async subscribe() {
    await this.o.amqp.onConnect(async (conn) => {
      if (this.stopping) return
      const ch = await conn.createChannel()
      ch.on('error', (err) =>
        this.o.log.warn({ err: err.message, queue: this.o.queue }, 'consumer channel error'),
      )
      this.unsettled.track(ch)
      await assertWorkQueue(ch, this.o.queue, this.o.bindings, this.o.amqp.queueType)
      await ch.prefetch(this.o.prefetch ?? 16)
      const ok = await ch.consume(this.o.queue, (msg) => {
        if (!msg) return // cancelled by the broker; the reconnect sets up again
        this.unsettled.add({ ch, msg })
        this.track(this.receive({ ch, msg }))
      })
      this.channel = ch
      this.tag = ok.consumerTag
    })
  }

  async stop() {
    this.stopping = true
    this.holds.releaseAll()
    if (this.channel && this.tag) await this.channel.cancel(this.tag).catch(() => undefined)
    await this.batch?.idle()
    await Promise.all(this.inFlight)
    await this.channel?.close().catch(() => undefined)
  }

  private track(p: Promise<void>) {
    const tracked = p
      .catch((err) => this.o.log.error({ err }, 'consumer bug'))
      .finally(() => this.inFlight.delete(tracked))
    this.inFlight.add(tracked)
  }

  private receive(d: Delivery): Promise<void> {
    const event = this.admit(d)
    if (!event) return Promise.resolve()
    return this.batch ? this.batch.submit({ ...d, event }) : this.processOne({ ...d, event })
  }

  /** The event, or null when the message was dead-lettered (not an event, or not from its source). */
  private admit({ ch, msg }: Delivery): CloudEvent | null {
    const event = parseEvent(msg.content)
    let check: OriginCheck = 'malformed'
    if (event) check = this.o.origins ? checkOrigin(event, this.originOf(msg), this.o.origins) : 'ok'
    if (event && check === 'ok') return event
    // Type and source as claimed, never the data: a forgery may carry anything.
    this.o.log.error(
      {
        queue: this.o.queue,
        refusal: check, // `reason` is redacted (appointments have one)
        source: event?.source,
        event_type: event?.type,
        event_id: event?.id,
      },
      'event refused; dead-lettered',
    )
    this.refused?.inc({ queue: this.o.queue, reason: check })
    this.unsettled.settle({ ch, msg })
    ch.nack(msg, false, false)
    return null
  }

  /**
   * What the broker says of a delivery. A message back from this consumer's delay queue (through
   * its own retry exchange, which no other user may write to, published as this service's user)
   * carries its first delivery's user and routing key, checked then.
   */
  private originOf(msg: ConsumeMessage): DeliveryOrigin {
    const headers = msg.properties.headers ?? {}
    const retried =
      msg.fields.exchange === retryExchangeOf(this.o.queue) &&
      msg.fields.routingKey === RETRY_BACK_KEY &&
      msg.properties.userId === this.o.amqp.user &&
      typeof headers[ORIGIN_USER_HEADER] === 'string' &&
      typeof headers[ORIGIN_KEY_HEADER] === 'string'
    if (retried) return { userId: headers[ORIGIN_USER_HEADER], routingKey: headers[ORIGIN_KEY_HEADER] }
    return { userId: msg.properties.userId as string | undefined, routingKey: msg.fields.routingKey }
  }

  private logOf(event: CloudEvent) {
    return this.o.log.child({ event_id: event.id, event_type: event.type, request_id: event.requestid })
  }

  private async processOne(d: Admitted): Promise<void> {
    const log = this.logOf(d.event)
    try {
      await this.o.knex.transaction(async (trx) => {
        if (!(await recordFresh(trx, [d.event.id])).size) return log.debug('duplicate event ignored')
        await this.o.handle(d.event, trx)
      })
      this.outage = 0
    } catch (err) {
      if (isConnectionError(err as Error)) return this.holdAndRequeue([d], log, err)
      return this.retryLater(d, log, err)
    }
    this.unsettled.settle(d)
    ack(d, log)
  }

  /** One transaction for the batch; if it fails, its messages one by one (a poison alone). */
  private async handleBatch(batch: Admitted[]): Promise<void> {
    try {
      await this.o.knex.transaction(async (trx) => {
        const fresh = await recordFresh(
          trx,
          batch.map((b) => b.event.id),
        )
        // Delivered twice (or twice in this batch): handled once.
        const todo = batch.filter((b) => fresh.delete(b.event.id)).map((b) => b.event)
        if (todo.length) await this.o.batch!.handle(todo, trx)
      })
      this.outage = 0
      this.unsettled.ackBatch(batch, this.o.log)
    } catch (err) {
      if (isConnectionError(err as Error)) return this.holdAndRequeue(batch, this.o.log, err)
      this.o.log.warn({ err, messages: batch.length }, 'batch failed; handling its messages one by one')
      for (const b of batch) await this.processOne(b)
    }
  }

  /** Database away: hold the messages, then hand them back (no attempt spent). */
  private async holdAndRequeue(held: Delivery[], log: Logger, err: unknown) {
    const ms = Math.min(this.maxHoldMs, 250 * 2 ** Math.min(this.outage++, 10))
    log.warn(
      { err, hold_ms: ms, messages: held.length },
      'database away; held, then requeued (no attempt spent)',
    )
    if (!this.stopping) await this.holds.wait(ms)
    for (const d of held) {
      this.unsettled.settle(d)
      requeue(d)
    }
  }

  /**
   * Through the service's own retry exchange into `<queue>.delay`, back after the attempt's backoff;
   * dead-lettered after the last attempt.
   */
  private async retryLater({ ch, msg }: Delivery, log: Logger, err: unknown) {
    const attempt = Number(msg.properties.headers?.[ATTEMPT_HEADER] ?? 0) + 1
    if (attempt >= this.maxAttempts) {
      log.error({ err, attempt }, 'event failed for the last time; dead-lettered')
      // If the channel is gone, the redelivery fails once more and is dead-lettered then.
      this.unsettled.settle({ ch, msg })
      ch.nack(msg, false, false)
      return
    }
    log.warn({ err, attempt }, 'event failed; will retry')
    try {
      const origin = this.originOf(msg)
      await this.o.amqp.publishTo(retryExchangeOf(this.o.queue), RETRY_DELAY_KEY, msg.content, {
        ...msg.properties,
        expiration: String(this.backoff(attempt)),
        headers: {
          ...msg.properties.headers,
          [ATTEMPT_HEADER]: attempt,
          ...(origin.userId === undefined ? {} : { [ORIGIN_USER_HEADER]: origin.userId }),
          [ORIGIN_KEY_HEADER]: origin.routingKey,
        },
      })
    } catch (sendErr) {
      // Broker trouble: hand it back (after a pause, not in a tight loop) with no attempt spent.
      log.warn({ err: sendErr, attempt }, 'could not schedule the retry; event requeued')
      if (!this.stopping) await this.holds.wait(1000)
      this.unsettled.settle({ ch, msg })
      return requeue({ ch, msg })
    }
    // The retry is in the broker; if this ack is lost, the original is handled again too, and
    // one of the two is skipped as a duplicate.
    this.unsettled.settle({ ch, msg })
    ch.ack(msg)
  }
}

/**
 * An idempotent, competing consumer. Each message is handled in one database transaction that
 * first records the event id in `processed_events`: a redelivered event is a no-op. The ack goes
 * out only after the commit. A failing message is retried after a growing delay (through the
 * service's own `<queue>.retry` exchange and `<queue>.delay` queue) and after `maxAttempts` lands in `<queue>.dlq`, never looping.
 *
 * A database that is away is not the message's fault: such a failure spends no attempt. The
 * message is held, then handed back to the queue, the hold growing while the outage lasts (up to
 * `maxHoldMs`), so an outage dead-letters nothing (on quorum queues, up to QUORUM_DELIVERY_LIMIT
 * hand-backs: about a day) and costs the database a few tries a second at most (prefetch / hold).
 */
export async function startConsumer(o: ConsumerOptions): Promise<Consumer> {
  const consumer = new IdempotentConsumer(o)
  await consumer.subscribe()
  return consumer
}
