import { JobRunner, traceOf, type Span } from '@clinic/platform'
import { ctxOfCause, isConnectionError, retryUntil } from '@clinic/platform/core'
import type { Logger } from 'pino'
import type { Clock } from './clock'
import {
  deliverMessage,
  type ClaimedMessage,
  type DeliveryStore,
  type Provider,
} from './domain/deliver-message'
import type { Channel } from './schemas/message'

export interface WorkerOptions {
  store: DeliveryStore
  log: Logger
  providers: Record<Channel, Provider>
  /** What time it is for due messages and their next attempt (COMMS_CLOCK_FILE; tests move it). */
  clock: Clock
  maxAttempts: number
  retryBaseMs: number
  staleMinutes: number
  /** Messages being delivered at once in this process (DELIVERY_CONCURRENCY). */
  concurrency: number
  /** Woken by inserts into messages (LISTEN); without it, the poll alone. */
  listen?: { databaseUrl: string; channel: string }
  /** How often to look for due messages without being woken. */
  pollMs?: number
  /** How often messages left `sending` by a dead worker are failed (real time). */
  sweepEveryMs?: number
  /** Emails get List-Unsubscribe headers with this URL (links/unsubscribe-link.ts); absent: none. */
  unsubscribeUrl?: (companyId: number, messageId: string, language: string) => Promise<string>
  random?: () => number
}

/**
 * Delivers queued messages: the rows are the jobs (the platform's JobRunner, as for reminders and
 * webhook deliveries). A message is claimed when due (a new one at once, a retry after its
 * backoff), sent, and its outcome written back; nothing waits in a process timer or a broker
 * queue, so a restart loses nothing. The claim is the at-most-once line: a worker that dies after
 * it leaves the row `sending`, and the sweep in this loop fails it "outcome unknown" once it is
 * `staleMinutes` old, never sending it again.
 */
export class DeliveryWorker extends JobRunner<ClaimedMessage> {
  private lastSweep = 0

  constructor(private readonly o: WorkerOptions) {
    super({
      name: 'messages',
      concurrency: o.concurrency,
      pollMs: o.pollMs ?? 1000,
      log: o.log,
      listen: o.listen && { ...o.listen, name: 'comms-delivery' },
    })
  }

  override async stop(): Promise<void> {
    await super.stop()
    await Promise.all(Object.values(this.o.providers).map((p) => p.close?.()))
  }

  protected async claimJobs(limit: number): Promise<ClaimedMessage[]> {
    if (Date.now() - this.lastSweep >= (this.o.sweepEveryMs ?? 60_000)) await this.sweep()
    return this.o.store.claim(this.o.clock(), limit)
  }

  /** Delivering a message is a span of the trace it was queued in (its cause). */
  protected override causeOf(m: ClaimedMessage) {
    return m.cause
  }

  protected async runJob(m: ClaimedMessage, span: Span): Promise<void> {
    // Who queued it, as the queued event said: the sent or failed event names them too, and are
    // children of this run's span.
    const ctx = ctxOfCause(
      { ...m, cause: { ...m.cause, ...traceOf(span) } },
      this.o.log.child({ request_id: m.cause.requestid, trace_id: span.spanContext().traceId }),
    )
    await deliverMessage(
      ctx,
      {
        // The provider has been called: its outcome is written even across a database outage
        // (until the claim is about to go stale), never by calling the provider again.
        store: withRetries(this.o.store, {
          until: Date.now() + (this.o.staleMinutes * 60_000) / 2,
          log: ctx.log,
        }),
        providers: this.o.providers,
        maxAttempts: this.o.maxAttempts,
        retryBaseMs: this.o.retryBaseMs,
        clock: this.o.clock,
        unsubscribeUrl: this.o.unsubscribeUrl,
        random: this.o.random,
      },
      m,
    )
  }

  /** Messages left `sending` past `staleMinutes` become failed "outcome unknown" (never resent). */
  async sweep(): Promise<void> {
    this.lastSweep = Date.now()
    try {
      const failed = await this.o.store.failStale(this.o.staleMinutes)
      if (failed.length)
        this.o.log.warn({ count: failed.length }, 'messages left sending marked failed (outcome unknown)')
    } catch (err) {
      this.o.log.error({ err }, 'stale sending sweep failed')
    }
  }
}

/**
 * The store, its writes tried again while the database is away (a connection error), until
 * `until`: then the error stands and the row stays `sending` for the sweep.
 */
export function withRetries(store: DeliveryStore, o: { until: number; log: Logger }): DeliveryStore {
  const retried = <T>(write: () => Promise<T>) =>
    retryUntil(write, {
      until: o.until,
      retryIf: isConnectionError,
      onRetry: (err) => o.log.warn({ err }, 'recording a delivery failed (database away); trying again'),
    })
  return {
    claim: (now, limit) => store.claim(now, limit),
    failStale: (minutes) => store.failStale(minutes),
    reschedule: (...args) => retried(() => store.reschedule(...args)),
    transaction: (companyId, work) => retried(() => store.transaction(companyId, work)),
  }
}
