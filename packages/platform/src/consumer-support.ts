import type { Channel, ConsumeMessage } from 'amqplib'
import type { Knex } from 'knex'
import type { Logger } from 'pino'
import type { Counter, Registry } from 'prom-client'
import type { CloudEvent } from './events'
import { registryCounter } from './http/metrics'

// The consumer's parts (consumer.ts): what it holds, how it acks and requeues (its batches are a
// GroupCommit with a linger).

/** Why a message was parked (a header of the parked copy, beside the headers it came with). */
export const PARKED_HEADER = 'x-clinic-parked'
/** The parked message's `user_id` and routing key as the broker delivered them (for operators). */
export const PARKED_USER_HEADER = 'x-clinic-parked-user-id'
export const PARKED_KEY_HEADER = 'x-clinic-parked-routing-key'

/**
 * The attempt a delivery is: 1 + the rejections the broker counted for `queue` in `x-death`. A
 * publisher may have set `x-death` itself; that can only park its own message sooner.
 */
export function attemptOf(msg: Pick<ConsumeMessage, 'properties'>, queue: string): number {
  const deaths: unknown = msg.properties.headers?.['x-death']
  if (!Array.isArray(deaths)) return 1
  let rejected = 0
  for (const d of deaths as Array<Record<string, unknown>>) {
    const count = Number(d?.count)
    if (d?.queue === queue && d?.reason === 'rejected' && Number.isSafeInteger(count) && count > 0)
      rejected += count
  }
  return rejected + 1
}

export type Delivery = { ch: Channel; msg: ConsumeMessage }
export type Admitted = Delivery & { event: CloudEvent }

/** Holds that end early when the consumer stops. */
export class Holds {
  private readonly pending = new Set<() => void>()
  wait(ms: number) {
    return new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer)
        this.pending.delete(done)
        resolve()
      }
      const timer = setTimeout(done, ms)
      this.pending.add(done)
    })
  }
  releaseAll() {
    for (const release of [...this.pending]) release()
  }
}

export const requeue = ({ ch, msg }: Delivery) => {
  try {
    ch.nack(msg, false, true)
  } catch {
    // The channel is gone: the broker hands the message out again anyway.
  }
}

/**
 * Committed: a failed ack (the channel went away) only means a redelivery, skipped as a duplicate.
 * `allUpTo`: every unacked message of the channel up to this one too (AMQP's `multiple`).
 */
export const ack = ({ ch, msg }: Delivery, log: Logger, allUpTo = false) => {
  try {
    ch.ack(msg, allUpTo)
  } catch (err) {
    log.warn({ err }, 'ack lost with the channel; the redelivery will be skipped as a duplicate')
  }
}

/** The event ids of `events` not seen before, recorded in processed_events in `trx`. */
export async function recordFresh(trx: Knex.Transaction, ids: string[]): Promise<Set<string>> {
  const rows: Array<{ event_id: string }> = await trx('processed_events')
    .insert(ids.map((event_id) => ({ event_id })))
    .onConflict('event_id')
    .ignore()
    .returning('event_id')
  return new Set(rows.map((r) => r.event_id))
}

/** Delivery tags not yet acked or nacked, per channel, in delivery order: what a batch's ack may cover. */
export class Unsettled {
  private readonly open = new Map<Channel, Set<number>>()

  track(ch: Channel) {
    this.open.set(ch, new Set())
    // Its unsettled messages go back to the queue with it (the broker's doing).
    ch.on('close', () => this.open.delete(ch))
  }

  add({ ch, msg }: Delivery) {
    this.open.get(ch)?.add(msg.fields.deliveryTag)
  }

  /** `d` is acked or nacked now: no batch's ack may cover it any more. */
  settle({ ch, msg }: Delivery) {
    this.open.get(ch)?.delete(msg.fields.deliveryTag)
  }

  /**
   * A committed batch, acked with one frame per channel (`multiple`: every tag up to the last) when
   * its messages are that channel's oldest unsettled ones, as they are when batches are handled in
   * delivery order; otherwise (a message before them still in hand) one by one, never acking a
   * message the batch does not hold.
   */
  ackBatch(batch: Delivery[], log: Logger) {
    const byChannel = new Map<Channel, Delivery[]>()
    for (const b of batch) byChannel.set(b.ch, [...(byChannel.get(b.ch) ?? []), b])
    for (const [ch, list] of byChannel) {
      const open = this.open.get(ch)
      const tags = list.map((b) => b.msg.fields.deliveryTag)
      if (open && list.length > 1 && oldestOf(open, tags)) {
        for (const t of tags) open.delete(t)
        ack(list.at(-1)!, log, true)
        continue
      }
      for (const b of list) {
        this.settle(b)
        ack(b, log)
      }
    }
  }
}

/** Whether `tags` (in delivery order) are the first of `open` (unsettled tags in delivery order). */
function oldestOf(open: Set<number>, tags: number[]): boolean {
  let i = 0
  for (const t of open) {
    if (i === tags.length) return true
    if (t !== tags[i++]) return false
  }
  return i === tags.length
}

const REFUSED = 'events_refused_total'
/** One counter per registry, shared by the consumers of a process. */
export function refusedCounter(metrics: Registry): Counter<'queue' | 'reason'> {
  return registryCounter(metrics, {
    name: REFUSED,
    help: 'Events refused by a consumer (malformed, or not from the broker user of their source), sent to its dead-letter queue',
    labelNames: ['queue', 'reason'],
  })
}
