import pg from 'pg'
import type { Logger } from 'pino'
import { DUE_CHANNEL, FEED_CHANNEL } from './channels'

/**
 * One LISTEN connection per process: wakes the delivery worker when deliveries are queued and the
 * change feed's long polls when their company's feed grows. Notifications only hurry things up:
 * the worker and the long polls also look again on their own (a lost connection is rebuilt).
 */
export class Notifications {
  private client: pg.Client | null = null
  private stopped = false
  private readonly dueListeners = new Set<() => void>()
  private readonly feedWaiters = new Map<number, Set<() => void>>()

  constructor(private readonly o: { databaseUrl: string; log: Logger; retryMs?: number }) {}

  async start(): Promise<void> {
    if (this.stopped) return
    const client = new pg.Client({
      connectionString: this.o.databaseUrl,
      application_name: 'webhooks-listen',
    })
    client.on('notification', (n) => {
      if (n.channel === DUE_CHANNEL) for (const fn of this.dueListeners) fn()
      else if (n.channel === FEED_CHANNEL)
        for (const fn of this.feedWaiters.get(Number(n.payload)) ?? []) fn()
    })
    client.on('error', (err) => {
      this.o.log.warn({ err }, 'webhooks listener lost; polling covers until it is back')
      this.client = null
      client.end().catch(() => undefined)
      setTimeout(() => void this.start(), this.o.retryMs ?? 1000).unref()
    })
    try {
      await client.connect()
      await client.query(`LISTEN ${DUE_CHANNEL}; LISTEN ${FEED_CHANNEL}`)
      this.client = client
    } catch (err) {
      this.o.log.warn({ err }, 'webhooks listener could not connect; retrying')
      await client.end().catch(() => undefined)
      setTimeout(() => void this.start(), this.o.retryMs ?? 1000).unref()
    }
  }

  onDue(fn: () => void): void {
    this.dueListeners.add(fn)
  }

  /** Resolves when the company's feed grew, after `ms`, or when `signal` aborts. */
  changed(companyId: number, ms: number, signal: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      const waiters = this.feedWaiters.get(companyId) ?? new Set<() => void>()
      this.feedWaiters.set(companyId, waiters)
      const done = () => {
        clearTimeout(timer)
        signal.removeEventListener('abort', done)
        waiters.delete(done)
        if (!waiters.size) this.feedWaiters.delete(companyId)
        resolve()
      }
      const timer = setTimeout(done, ms)
      signal.addEventListener('abort', done)
      waiters.add(done)
    })
  }

  async stop(): Promise<void> {
    this.stopped = true
    await this.client?.end().catch(() => undefined)
  }
}
