import type { Channel, ConsumeMessage } from 'amqplib'
import type { Knex } from 'knex'
import type { Logger } from 'pino'
import type { CloudEvent } from './events'

// The consumer's parts (consumer.ts): what it holds, how it acks and requeues (its batches are a
// GroupCommit with a linger).

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
