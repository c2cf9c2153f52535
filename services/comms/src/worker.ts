import { ctxFromEvent, startConsumer, type Amqp, type Consumer } from '@clinic/platform'
import type { Knex } from 'knex'
import type { Logger } from 'pino'
import { RetryLater, deliverMessage, type DeliveryStore, type Provider } from './domain/deliver-message'
import type { Channel, Message } from './schemas/message'

export const DELIVERY_QUEUE = 'comms.delivery'

/** The worker's side of `comms.messages` (db/repositories/delivery-repository.ts). */
export interface DeliveryStorage {
  /** The store of one job, finishing in the consumer's transaction `trx`. */
  store(trx: Knex.Transaction): DeliveryStore
  /** Messages left `sending` longer than `staleMinutes` made `failed`: those changed. */
  failStaleSending(staleMinutes: number): Promise<Message[]>
}

export interface WorkerOptions {
  knex: Knex
  deliveries: DeliveryStorage
  amqp: Amqp
  log: Logger
  providers: Record<Channel, Provider>
  maxAttempts: number
  retryBaseMs: number
  staleMinutes: number
  /** How often the stale-sending sweep runs. */
  sweepEveryMs?: number
  prefetch?: number
  /** Emails get List-Unsubscribe headers with this URL (links/unsubscribe-link.ts); absent: none. */
  unsubscribeUrl?: (companyId: number, messageId: string, language: string) => string
}

/** Exponential backoff with full jitter in [d/2, d], capped at 10 minutes. */
export const retryDelay = (base: number, attempt: number, random = Math.random) => {
  const d = Math.min(600_000, base * 2 ** (attempt - 1))
  return Math.round(d / 2 + (random() * d) / 2)
}

/**
 * The delivery worker: consumes `comms.message.queued` (platform idempotent consumer: redelivered
 * events are no-ops; failures go to the `.retry` delay queue, then the `.dlq`), and sweeps
 * messages left `sending` by a dead worker to `failed`.
 */
export async function startDeliveryWorker(o: WorkerOptions): Promise<{ stop(): Promise<void> }> {
  const consumer: Consumer = await startConsumer({
    amqp: o.amqp,
    knex: o.knex,
    log: o.log,
    queue: DELIVERY_QUEUE,
    bindings: ['comms.message.queued'],
    // A handler holds a pooled connection for its job and takes another for the claim: stay well
    // under the pool size.
    prefetch: o.prefetch ?? 4,
    // The domain gives up (failed) after maxAttempts; the consumer's own limit only catches
    // poison jobs (a broken event, a database fault) and dead-letters them.
    maxAttempts: o.maxAttempts + 3,
    backoffMs: (n) => retryDelay(o.retryBaseMs, n),
    handle: async (event, trx) => {
      const data = event.data as { id?: unknown }
      if (event.type !== 'comms.message.queued' || typeof data.id !== 'string') return
      const outcome = await deliverMessage(
        ctxFromEvent(event, o.log),
        {
          store: o.deliveries.store(trx),
          providers: o.providers,
          maxAttempts: o.maxAttempts,
          unsubscribeUrl: o.unsubscribeUrl,
        },
        { id: data.id },
      )
      if (outcome === 'retry') throw new RetryLater('transient delivery failure')
    },
  })
  const sweep = async () => {
    try {
      const failed = await o.deliveries.failStaleSending(o.staleMinutes)
      if (failed.length)
        o.log.warn({ count: failed.length }, 'messages left sending marked failed (outcome unknown)')
    } catch (err) {
      o.log.error({ err }, 'stale sending sweep failed')
    }
  }
  const timer = setInterval(() => void sweep(), o.sweepEveryMs ?? 60_000)
  timer.unref()
  return {
    async stop() {
      clearInterval(timer)
      await consumer.stop()
      await Promise.all(Object.values(o.providers).map((p) => p.close?.()))
    },
  }
}
