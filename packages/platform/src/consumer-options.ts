import type { Knex } from 'knex'
import type { Logger } from 'pino'
import type { Registry } from 'prom-client'
import type { Amqp } from './amqp'
import type { Trace } from './context'
import type { EventTraces } from './consumer-span'
import type { EventOrigins } from './event-origin'
import type { CloudEvent } from './events'

/** What an idempotent consumer (consumer.ts) is started with. */
export interface ConsumerOptions {
  amqp: Amqp
  knex: Knex
  log: Logger
  /**
   * Its work queue, as the broker's topology declares it (topology.cjs): bound to clinic.events,
   * a failed attempt waiting in `<queue>.wait` before it comes back, parked in `<queue>.dlq`.
   */
  queue: string
  /**
   * Runs inside the transaction that also records the event id. Throw to retry. `trace`: the span
   * handling it, which what it leaves (job rows, events, calls) is a child of.
   */
  handle: (event: CloudEvent, trx: Knex.Transaction, trace: Trace) => Promise<void>
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
    handle: (events: CloudEvent[], trx: Knex.Transaction, traces: EventTraces) => Promise<void>
  }
  prefetch?: number
  /**
   * When set, an event is handled only when the broker vouches for its `source` (event-origin.ts):
   * `user_id` is that source's broker user, the source emits its type, and the routing key is the
   * type. Anything else is parked in the dead-letter queue at once (never retried), counted in
   * `events_refused_total{queue, reason}` of `metrics`. Every service's consumer sets it; only
   * tests of the consumer's mechanics leave it out.
   */
  origins?: EventOrigins
  /** The service's registry (`app.metrics`). */
  metrics?: Registry
  /** Attempts before a failing event is parked (the delay between two is the topology's). */
  maxAttempts?: number
  /** Longest hold of a message while the database is away (default 10 s). */
  maxHoldMs?: number
}
