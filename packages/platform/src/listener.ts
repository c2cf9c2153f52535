import pg from 'pg'
import type { Logger } from 'pino'

/**
 * One LISTEN connection on a PostgreSQL channel, calling `onNotify` for each notification. A lost
 * connection is made again after `retryMs`: notifications only hurry work along, and whoever
 * listens also polls, so the ones missed meanwhile cost a poll's delay, nothing more.
 */
export class Listener {
  private client: pg.Client | null = null
  private stopped = false

  constructor(
    private readonly o: {
      databaseUrl: string
      channel: string
      /** application_name of the connection (who listens, in pg_stat_activity). */
      name: string
      log: Logger
      retryMs: number
      onNotify: () => void
    },
  ) {}

  async start(): Promise<void> {
    if (this.stopped) return
    const client = new pg.Client({ connectionString: this.o.databaseUrl, application_name: this.o.name })
    client.on('notification', () => this.o.onNotify())
    client.on('error', (err) => {
      this.o.log.warn({ err, channel: this.o.channel }, 'listener lost; the poll covers until it is back')
      this.client = null
      client.end().catch(() => undefined)
      this.again()
    })
    try {
      await client.connect()
      await client.query(`LISTEN ${this.o.channel}`)
      this.client = client
    } catch (err) {
      this.o.log.warn({ err, channel: this.o.channel }, 'listener could not connect; retrying')
      await client.end().catch(() => undefined)
      this.again()
    }
  }

  async stop(): Promise<void> {
    this.stopped = true
    await this.client?.end().catch(() => undefined)
  }

  private again() {
    if (!this.stopped) setTimeout(() => void this.start(), this.o.retryMs).unref()
  }
}
