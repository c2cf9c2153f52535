import type { Channel, ConsumeMessage } from 'amqplib'
import type { Knex } from 'knex'
import type { Logger } from 'pino'
import { assertWorkQueue, type Amqp } from './amqp'
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
  prefetch?: number
  maxAttempts?: number
  /** Delay before retry n (1-based), in ms. */
  backoffMs?: (attempt: number) => number
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
 */
export async function startConsumer(o: ConsumerOptions): Promise<Consumer> {
  const maxAttempts = o.maxAttempts ?? 5
  const backoff = o.backoffMs ?? ((n: number) => Math.min(60_000, 1000 * 2 ** (n - 1)))
  const inFlight = new Set<Promise<void>>()
  let channel: Channel | null = null
  let tag: string | null = null
  let stopping = false

  const processOne = async (ch: Channel, msg: ConsumeMessage) => {
    const event = parseEvent(msg.content)
    if (!event) {
      o.log.error({ queue: o.queue }, 'malformed event; dead-lettered')
      ch.nack(msg, false, false)
      return
    }
    const log = o.log.child({ event_id: event.id, event_type: event.type, request_id: event.requestid })
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
      ch.ack(msg)
    } catch (err) {
      const attempt = Number(msg.properties.headers?.[ATTEMPT_HEADER] ?? 0) + 1
      if (attempt >= maxAttempts) {
        log.error({ err, attempt }, 'event failed for the last time; dead-lettered')
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
        ch.ack(msg)
      } catch {
        // Broker trouble: leave it unacked; it comes back when the channel closes.
        ch.nack(msg, false, true)
      }
    }
  }

  await o.amqp.onConnect(async (conn) => {
    if (stopping) return
    const ch = await conn.createChannel()
    ch.on('error', (err) => o.log.warn({ err: err.message, queue: o.queue }, 'consumer channel error'))
    await assertWorkQueue(ch, o.queue, o.bindings, o.amqp.queueType)
    await ch.prefetch(o.prefetch ?? 16)
    const ok = await ch.consume(o.queue, (msg) => {
      if (!msg) return // cancelled by the broker; the reconnect sets up again
      const p = processOne(ch, msg)
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
      if (channel && tag) await channel.cancel(tag).catch(() => undefined)
      await Promise.all(inFlight)
      await channel?.close().catch(() => undefined)
    },
  }
}
