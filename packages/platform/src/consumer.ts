import type { Channel, ConsumeMessage } from 'amqplib'
import type { Knex } from 'knex'
import type { Logger } from 'pino'
import { assertWorkQueue, type Amqp } from './amqp'
import { Counter, type Registry } from 'prom-client'
import { isConnectionError } from './errors'
import { checkEventSignature, type EventKeys } from './event-signing'
import { parseEvent, type CloudEvent } from './events'

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
   * When set, only events signed with this key (or their source's key) are handled; unsigned or
   * badly signed ones go to the dead-letter queue at once, counted in
   * `events_refused_total{queue, reason}` of `metrics`.
   */
  signingSecret?: EventKeys
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
  return (
    (metrics.getSingleMetric(REFUSED) as Counter<'queue' | 'reason'> | undefined) ??
    new Counter({
      name: REFUSED,
      help: 'Events refused by a consumer (unsigned or badly signed), sent to its dead-letter queue',
      labelNames: ['queue', 'reason'] as const,
      registers: [metrics],
    })
  )
}

export const ATTEMPT_HEADER = 'x-clinic-attempt'

export interface Consumer {
  /** Stop taking messages and wait for the ones in hand. */
  stop(): Promise<void>
}

/**
 * An idempotent, competing consumer. Each message is handled in one database transaction that
 * first records the event id in `processed_events`: a redelivered event is a no-op. The ack goes
 * out only after the commit. A failing message is retried after a growing delay (through the
 * `<queue>.retry` queue) and after `maxAttempts` lands in `<queue>.dlq`, never looping.
 *
 * A database that is away is not the message's fault: such a failure spends no attempt. The
 * message is held, then handed back to the queue, the hold growing while the outage lasts (up to
 * `maxHoldMs`), so an outage of any length dead-letters nothing and costs the database a few
 * tries a second at most (prefetch / hold).
 */
export async function startConsumer(o: ConsumerOptions): Promise<Consumer> {
  const maxAttempts = o.maxAttempts ?? 5
  const backoff = o.backoffMs ?? ((n: number) => Math.min(60_000, 1000 * 2 ** (n - 1)))
  const maxHoldMs = o.maxHoldMs ?? 10_000
  const inFlight = new Set<Promise<void>>()
  // Consecutive failures with the database away; the first success ends the outage.
  let outage = 0
  const holds = new Set<() => void>()
  const hold = (ms: number) =>
    new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer)
        holds.delete(done)
        resolve()
      }
      const timer = setTimeout(done, ms)
      holds.add(done)
    })
  const requeue = (ch: Channel, msg: ConsumeMessage) => {
    try {
      ch.nack(msg, false, true)
    } catch {
      // The channel is gone: the broker hands the message out again anyway.
    }
  }
  const refused = o.metrics ? refusedCounter(o.metrics) : null
  let channel: Channel | null = null
  let tag: string | null = null
  let stopping = false

  /** The event, or null when the message was dead-lettered (not an event, or not signed). */
  const admit = (ch: Channel, msg: ConsumeMessage): CloudEvent | null => {
    const event = parseEvent(msg.content)
    if (!event) {
      o.log.error({ queue: o.queue }, 'malformed event; dead-lettered')
      ch.nack(msg, false, false)
      return null
    }
    if (o.signingSecret !== undefined) {
      const check = checkEventSignature(event, o.signingSecret)
      if (check !== 'ok') {
        o.log.error(
          { queue: o.queue, reason: check, source: event.source, event_id: event.id },
          'event refused; dead-lettered',
        )
        refused?.inc({ queue: o.queue, reason: check })
        ch.nack(msg, false, false)
        return null
      }
    }
    return event
  }
  const logOf = (event: CloudEvent) =>
    o.log.child({ event_id: event.id, event_type: event.type, request_id: event.requestid })
  const ack = (ch: Channel, msg: ConsumeMessage, log: Logger) => {
    // Committed: a failed ack (the channel went away) only means a redelivery, which the
    // processed_events row turns into a no-op.
    try {
      ch.ack(msg)
    } catch (err) {
      log.warn({ err }, 'ack lost with the channel; the redelivery will be skipped as a duplicate')
    }
  }
  /** Database away: hold the message, then hand it back (no attempt spent). */
  const holdAndRequeue = async (
    held: Array<{ ch: Channel; msg: ConsumeMessage }>,
    log: Logger,
    err: unknown,
  ) => {
    const ms = Math.min(maxHoldMs, 250 * 2 ** Math.min(outage++, 10))
    log.warn(
      { err, hold_ms: ms, messages: held.length },
      'database away; held, then requeued (no attempt spent)',
    )
    if (!stopping) await hold(ms)
    for (const { ch, msg } of held) requeue(ch, msg)
  }

  const processOne = async (ch: Channel, msg: ConsumeMessage, admitted?: CloudEvent) => {
    const event = admitted ?? admit(ch, msg)
    if (!event) return
    const log = logOf(event)
    try {
      await o.knex.transaction(async (trx) => {
        const fresh = await trx('processed_events')
          .insert({ event_id: event.id })
          .onConflict('event_id')
          .ignore()
          .returning('event_id')
        if (!fresh.length) {
          log.debug('duplicate event ignored')
          return
        }
        await o.handle(event, trx)
      })
      outage = 0
    } catch (err) {
      if (isConnectionError(err as Error)) return holdAndRequeue([{ ch, msg }], log, err)
      await retryLater(ch, msg, log, err)
      return
    }
    ack(ch, msg, log)
  }

  // Batches: one flush at a time, in delivery order; the next one gathers meanwhile.
  let pending: Array<{ ch: Channel; msg: ConsumeMessage; event: CloudEvent }> = []
  let flushing: Promise<void> | null = null
  let linger: NodeJS.Timeout | null = null
  const flush = async (): Promise<void> => {
    if (linger) clearTimeout(linger)
    linger = null
    const batch = pending
    pending = []
    if (!batch.length) return
    try {
      await o.knex.transaction(async (trx) => {
        const fresh = new Set(
          (
            await trx('processed_events')
              .insert(batch.map((b) => ({ event_id: b.event.id })))
              .onConflict('event_id')
              .ignore()
              .returning('event_id')
          ).map((r: { event_id: string }) => r.event_id),
        )
        // Delivered twice (or twice in this batch): handled once.
        const todo = batch.filter((b) => fresh.delete(b.event.id)).map((b) => b.event)
        if (todo.length) await o.batch!.handle(todo, trx)
      })
      outage = 0
      for (const b of batch) ack(b.ch, b.msg, o.log)
    } catch (err) {
      if (isConnectionError(err as Error)) return holdAndRequeue(batch, o.log, err)
      o.log.warn({ err, messages: batch.length }, 'batch failed; handling its messages one by one')
      for (const b of batch) await processOne(b.ch, b.msg, b.event)
    }
  }
  const flushNow = (): Promise<void> => {
    flushing ??= (async () => {
      while (pending.length >= o.batch!.size || (pending.length && !linger)) await flush()
    })().finally(() => (flushing = null))
    return flushing
  }
  const enqueue = (ch: Channel, msg: ConsumeMessage): Promise<void> => {
    const event = admit(ch, msg)
    if (!event) return Promise.resolve()
    pending.push({ ch, msg, event })
    if (pending.length >= o.batch!.size) return flushNow()
    linger ??= setTimeout(() => {
      linger = null
      void flushNow()
    }, o.batch!.lingerMs)
    return flushing ?? Promise.resolve()
  }

  /** Through `<queue>.retry` after the attempt's backoff; dead-lettered after the last attempt. */
  const retryLater = async (ch: Channel, msg: ConsumeMessage, log: Logger, err: unknown) => {
    const attempt = Number(msg.properties.headers?.[ATTEMPT_HEADER] ?? 0) + 1
    if (attempt >= maxAttempts) {
      log.error({ err, attempt }, 'event failed for the last time; dead-lettered')
      // If the channel is gone, the redelivery fails once more and is dead-lettered then.
      ch.nack(msg, false, false)
      return
    }
    log.warn({ err, attempt }, 'event failed; will retry')
    try {
      await o.amqp.sendToQueue(`${o.queue}.retry`, msg.content, {
        ...msg.properties,
        expiration: String(backoff(attempt)),
        headers: { ...msg.properties.headers, [ATTEMPT_HEADER]: attempt },
      })
    } catch (sendErr) {
      // Broker trouble: hand it back (after a pause, not in a tight loop) with no attempt spent.
      log.warn({ err: sendErr, attempt }, 'could not schedule the retry; event requeued')
      if (!stopping) await hold(1000)
      requeue(ch, msg)
      return
    }
    // The retry is in the broker; if this ack is lost, the original is handled again too, and
    // one of the two is skipped as a duplicate.
    ch.ack(msg)
  }

  await o.amqp.onConnect(async (conn) => {
    if (stopping) return
    const ch = await conn.createChannel()
    ch.on('error', (err) => o.log.warn({ err: err.message, queue: o.queue }, 'consumer channel error'))
    await assertWorkQueue(ch, o.queue, o.bindings, o.amqp.queueType)
    await ch.prefetch(o.prefetch ?? 16)
    const ok = await ch.consume(o.queue, (msg) => {
      if (!msg) return // cancelled by the broker; the reconnect sets up again
      const p = (o.batch ? enqueue(ch, msg) : processOne(ch, msg))
        .catch((err) => o.log.error({ err }, 'consumer bug'))
        .finally(() => inFlight.delete(p))
      inFlight.add(p)
    })
    channel = ch
    tag = ok.consumerTag
  })

  return {
    async stop() {
      stopping = true
      for (const release of [...holds]) release()
      if (channel && tag) await channel.cancel(tag).catch(() => undefined)
      if (o.batch) await flushNow()
      await Promise.all(inFlight)
      await channel?.close().catch(() => undefined)
    },
  }
}
