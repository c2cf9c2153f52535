import type { Channel, ConsumeMessage } from 'amqplib'
import type { Logger } from 'pino'
import { DEAD_LETTER_EXCHANGE, checkOn } from './amqp'
import type { Counter } from 'prom-client'
import { isConnectionError } from './errors'
import { checkOrigin, type OriginCheck } from './event-origin'
import { parseEvent, type CloudEvent } from './events'
import {
  Holds,
  PARKED_HEADER,
  PARKED_KEY_HEADER,
  PARKED_USER_HEADER,
  Unsettled,
  ack,
  attemptOf,
  refusedCounter,
  recordFresh,
  requeue,
  type Admitted,
  type Delivery,
} from './consumer-support'
import { GroupCommit } from './group-commit'
import type { ConsumerOptions } from './consumer-options'
import { consumerSpan, type EventTraces } from './consumer-span'
import { endSpan, traceOf, type Span } from './tracing'

export { PARKED_HEADER, PARKED_KEY_HEADER, PARKED_USER_HEADER, attemptOf } from './consumer-support'
export type { ConsumerOptions } from './consumer-options'

export interface Consumer {
  /** Stop taking messages and wait for the ones in hand. */
  stop(): Promise<void>
}

class IdempotentConsumer implements Consumer {
  private readonly maxAttempts: number
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
      await checkOn(conn, (ch) => ch.checkQueue(this.o.queue))
      const ch = await conn.createChannel()
      ch.on('error', (err) =>
        this.o.log.warn({ err: err.message, queue: this.o.queue }, 'consumer channel error'),
      )
      this.unsettled.track(ch)
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
    const admitted = this.admit(d)
    if (typeof admitted === 'string') return this.park(d, admitted)
    return this.batch
      ? this.batch.submit({ ...d, event: admitted })
      : this.processOne({ ...d, event: admitted })
  }

  /**
   * The event, or why it is refused: not an event, or not from its source by the broker's word
   * alone (the `user_id` RabbitMQ validated on its first publish, and the routing key it has kept
   * since, also after a retry: the broker moved it, nobody republished it).
   */
  private admit({ msg }: Delivery): CloudEvent | Exclude<OriginCheck, 'ok'> {
    const event = parseEvent(msg.content)
    if (!event) return this.refuse(msg, 'malformed', null)
    if (!this.o.origins) return event
    const origin = { userId: msg.properties.userId as string | undefined, routingKey: msg.fields.routingKey }
    const check = checkOrigin(event, origin, this.o.origins)
    return check === 'ok' ? event : this.refuse(msg, check, event)
  }

  private refuse<R extends Exclude<OriginCheck, 'ok'>>(
    msg: ConsumeMessage,
    check: R,
    event: CloudEvent | null,
  ): R {
    // Type and source as claimed, never the data: a forgery may carry anything.
    this.o.log.error(
      {
        queue: this.o.queue,
        refusal: check, // `reason` is redacted (appointments have one)
        source: event?.source,
        event_type: event?.type,
        event_id: event?.id,
        user_id: msg.properties.userId,
      },
      'event refused; parked in the dead-letter queue',
    )
    this.refused?.inc({ queue: this.o.queue, reason: check })
    return check
  }

  private logOf(event: CloudEvent, span: Span) {
    return this.o.log.child({
      event_id: event.id,
      event_type: event.type,
      request_id: event.requestid,
      trace_id: span.spanContext().traceId,
    })
  }

  private async processOne(d: Admitted): Promise<void> {
    const span = consumerSpan(d, this.o.queue)
    const log = this.logOf(d.event, span)
    try {
      await this.o.knex.transaction(async (trx) => {
        if (!(await recordFresh(trx, [d.event.id])).size) return log.debug('duplicate event ignored')
        await this.o.handle(d.event, trx, traceOf(span))
      })
      this.outage = 0
    } catch (err) {
      endSpan(span, err)
      if (isConnectionError(err as Error)) return this.holdAndRequeue([d], log, err)
      return this.retryLater(d, log, err)
    }
    endSpan(span)
    this.unsettled.settle(d)
    ack(d, log)
  }

  /** One transaction for the batch; if it fails, its messages one by one (a poison alone). */
  private async handleBatch(batch: Admitted[]): Promise<void> {
    // A span per event (each in its own trace), all from the batch's start to its commit.
    const started = Date.now()
    const spans = new Map(batch.map((b) => [b.event, consumerSpan(b, this.o.queue, started)]))
    const traces: EventTraces = (event) => {
      const span = spans.get(event)
      return span ? traceOf(span) : {}
    }
    try {
      await this.o.knex.transaction(async (trx) => {
        const fresh = await recordFresh(
          trx,
          batch.map((b) => b.event.id),
        )
        // Delivered twice (or twice in this batch): handled once.
        const todo = batch.filter((b) => fresh.delete(b.event.id)).map((b) => b.event)
        if (todo.length) await this.o.batch!.handle(todo, trx, traces)
      })
      for (const span of spans.values()) endSpan(span)
      this.outage = 0
      this.unsettled.ackBatch(batch, this.o.log)
    } catch (err) {
      for (const span of spans.values()) endSpan(span, err)
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
   * Rejected: the broker dead-letters it into `<queue>.wait` and, after the topology's delay, back
   * into the queue, `user_id` and routing key as they were. The last attempt is parked instead.
   */
  private async retryLater(d: Delivery, log: Logger, err: unknown) {
    const attempt = attemptOf(d.msg, this.o.queue)
    if (attempt >= this.maxAttempts) {
      log.error({ err, attempt }, 'event failed for the last time; parked in the dead-letter queue')
      return this.park(d, 'failed')
    }
    log.warn({ err, attempt }, 'event failed; will retry')
    this.unsettled.settle(d)
    try {
      d.ch.nack(d.msg, false, false)
    } catch {
      // The channel is gone: the broker hands the message out again, this attempt not counted.
    }
  }

  /**
   * Copies the message into `<queue>.dlq` (clinic.events.dlx, routing key the queue), with why and
   * what the broker said of it, then acks it. The copy goes out as this service's user: the
   * dead-letter queues are for operators, and no service reads them. If the broker cannot take it,
   * the message is handed back after a pause.
   */
  private async park({ ch, msg }: Delivery, why: string): Promise<void> {
    const { userId, expiration: _, ...properties } = msg.properties
    try {
      await this.o.amqp.publishTo(DEAD_LETTER_EXCHANGE, this.o.queue, msg.content, {
        ...properties,
        headers: {
          ...properties.headers,
          [PARKED_HEADER]: why,
          [PARKED_USER_HEADER]: typeof userId === 'string' ? userId : '',
          [PARKED_KEY_HEADER]: msg.fields.routingKey,
        },
      })
    } catch (err) {
      this.o.log.warn({ err, queue: this.o.queue }, 'could not park the message; handed back')
      if (!this.stopping) await this.holds.wait(1000)
      this.unsettled.settle({ ch, msg })
      return requeue({ ch, msg })
    }
    // Parked; if this ack is lost, the message comes again and is parked once more.
    this.unsettled.settle({ ch, msg })
    ack({ ch, msg }, this.o.log)
  }
}

/**
 * An idempotent, competing consumer. Each message is handled in one database transaction that
 * first records the event id in `processed_events`: a redelivered event is a no-op. The ack goes
 * out only after the commit. A failing message is rejected, and the broker brings it back after the
 * topology's delay (through `<queue>.wait`, topology.cjs); after `maxAttempts` it is parked in
 * `<queue>.dlq`, never looping. A message not from its source is parked at once.
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
