import amqplib, { type Channel, type ChannelModel, type ConfirmChannel, type Options } from 'amqplib'
import type { Logger } from 'pino'
import { DEAD_LETTER_EXCHANGE, EXCHANGE } from '../topology.cjs'
import { amqpUserOf } from './event-origin'
import type { CloudEvent } from './events'

export { DEAD_LETTER_EXCHANGE, EXCHANGE, QUORUM_DELIVERY_LIMIT, queueNames } from '../topology.cjs'

export interface AmqpOptions {
  url: string
  /**
   * Every node of a cluster (host:port): each (re)connect tries the next after the one that
   * failed or closed, with the URL's user, password and vhost. Empty: the URL's host only.
   */
  hosts?: readonly string[]
  log: Logger
  /** Connection name shown in the RabbitMQ management UI. */
  name: string
  /** How long a publish waits for the broker's confirms before it fails (default 10 s). */
  confirmTimeoutMs?: number
}

type Setup = (conn: ChannelModel) => Promise<void>

/**
 * One AMQP connection that survives broker restarts: it reconnects with backoff and re-runs
 * every registered setup (topology, consumers) on each new connection. Publishing waits for
 * publisher confirms and fails fast while disconnected, so callers (the outbox relay) keep
 * their rows and retry.
 */
export class Amqp {
  private conn: ChannelModel | null = null
  private pub: ConfirmChannel | null = null
  private setups: Setup[] = []
  private closing = false
  private connecting: Promise<void> | null = null
  private attempt = 0
  /** The node of `hosts` the next connect tries. */
  private node = 0
  private readyWaiters: Array<() => void> = []
  /** The broker user this connection logs in as: every message goes out with it as `user_id`. */
  readonly user: string
  private readonly confirmTimeoutMs: number

  constructor(private readonly opts: AmqpOptions) {
    this.user = amqpUserOf(opts.url)
    this.confirmTimeoutMs = opts.confirmTimeoutMs ?? 10_000
  }

  get connected(): boolean {
    return this.pub !== null
  }

  /** Resolves on the first successful connection; keeps retrying in the background until then. */
  start(): Promise<void> {
    this.connecting ??= this.loop()
    return new Promise((resolve) => (this.connected ? resolve() : this.readyWaiters.push(resolve)))
  }

  /** Runs now if connected, and again after every reconnect. */
  async onConnect(setup: Setup): Promise<void> {
    this.setups.push(setup)
    if (this.conn) await setup(this.conn)
  }

  private async loop(): Promise<void> {
    while (!this.closing && !this.conn) {
      try {
        await this.connectOnce()
        this.attempt = 0
      } catch (err) {
        this.conn = null
        this.pub = null
        const delay = Math.min(30_000, 250 * 2 ** Math.min(this.attempt++, 7))
        this.opts.log.warn({ err: (err as Error).message, retry_in_ms: delay }, 'AMQP connect failed')
        await new Promise((r) => setTimeout(r, delay).unref())
      }
    }
    this.connecting = null
  }

  /** The URL of the node to try now; the next call tries the next node. */
  private nextUrl(): string {
    const hosts = this.opts.hosts ?? []
    if (!hosts.length) return this.opts.url
    const url = new URL(this.opts.url)
    url.host = hosts[this.node++ % hosts.length]!
    return url.toString()
  }

  private async connectOnce() {
    const url = this.nextUrl()
    const conn = await amqplib.connect(url, {
      clientProperties: { connection_name: this.opts.name },
    })
    conn.on('error', (err) => this.opts.log.warn({ err: err.message }, 'AMQP connection error'))
    conn.on('close', () => {
      if (this.conn !== conn) return
      this.conn = null
      this.pub = null
      if (!this.closing) {
        this.opts.log.warn('AMQP connection closed; reconnecting')
        this.connecting ??= this.loop()
      }
    })
    try {
      const pub = await conn.createConfirmChannel()
      // Every publish waiting for its confirms listens for 'close' until they come (`confirmed`),
      // so a busy service has many such listeners at once, each removed when its wait ends.
      pub.setMaxListeners(0)
      pub.on('error', (err) => this.opts.log.warn({ err: err.message }, 'AMQP publish channel error'))
      // A channel error (a refused publish) closes the channel and not the connection: start over
      // on a new connection rather than keep a dead channel that every publish would fail on.
      pub.on('close', () => {
        if (this.pub !== pub) return
        this.pub = null
        void conn.close().catch(() => undefined)
      })
      await checkExchanges(conn)
      this.conn = conn
      for (const setup of this.setups) await setup(conn)
      this.pub = pub
    } catch (err) {
      this.conn = null
      await conn.close().catch(() => undefined)
      throw err
    }
    this.opts.log.info({ node: new URL(url).host }, 'AMQP connected')
    for (const w of this.readyWaiters.splice(0)) w()
  }

  /**
   * Publishes events to `clinic.events` (routing key = type) and waits for the broker's confirms.
   */
  async publish(events: CloudEvent[]): Promise<void> {
    await this.publishRaw(
      events.map((e) => ({ id: e.id, type: e.type, body: Buffer.from(JSON.stringify(e)) })),
    )
  }

  /**
   * The same for events already serialised (the outbox relay sends the stored JSON as is).
   * `headers`: AMQP headers of the message (the relay's publish span as `traceparent`).
   */
  async publishRaw(
    events: Array<{ id: string; type: string; body: Buffer; headers?: object }>,
  ): Promise<void> {
    const ch = this.pub
    if (!ch) throw new Error('AMQP not connected')
    const timestamp = Math.floor(Date.now() / 1000)
    for (const e of events) {
      ch.publish(EXCHANGE, e.type, e.body, {
        persistent: true,
        messageId: e.id,
        type: e.type,
        contentType: 'application/cloudevents+json',
        timestamp,
        // Checked by RabbitMQ against the connection's user: the consumers' proof of the source.
        userId: this.user,
        ...(e.headers ? { headers: e.headers } : {}),
      })
    }
    await this.confirmed(ch)
  }

  /**
   * The broker's confirms for everything published on `ch`, or an error: when the channel closes
   * first, or when none come within `confirmTimeoutMs` (then the connection is dropped and made
   * again). amqplib 0.10 can leave `waitForConfirms` pending forever when a channel closes with
   * confirms outstanding (amqp-node/amqplib#846); a caller holding a transaction open on it, as
   * the outbox relay does, would then hold it forever.
   */
  private async confirmed(ch: ConfirmChannel): Promise<void> {
    let onClose = () => undefined as void
    let timer: NodeJS.Timeout | undefined
    const failed = new Promise<never>((_, reject) => {
      onClose = () => reject(new Error('AMQP channel closed before the confirms'))
      ch.once('close', onClose)
      timer = setTimeout(() => {
        reject(new Error(`no publisher confirms within ${this.confirmTimeoutMs} ms`))
        if (this.pub === ch) void this.conn?.close().catch(() => undefined)
      }, this.confirmTimeoutMs)
    })
    try {
      await Promise.race([ch.waitForConfirms(), failed])
    } finally {
      ch.off('close', onClose)
      clearTimeout(timer)
    }
  }

  /** Runs `fn` on a channel of its own (inspection: queue depths, dead letters), then closes it. */
  async withChannel<T>(fn: (ch: Channel) => Promise<T>): Promise<T> {
    const conn = this.conn
    if (!conn) throw new Error('AMQP not connected')
    const ch = await conn.createChannel()
    try {
      return await fn(ch)
    } finally {
      await ch.close().catch(() => undefined)
    }
  }

  /**
   * Publishes one message to `exchange` as this connection's user (`user_id`) and waits for the
   * confirm: a consumer parking a message in its dead-letter queue.
   */
  async publishTo(
    exchange: string,
    routingKey: string,
    content: Buffer,
    options: Options.Publish,
  ): Promise<void> {
    const ch = this.pub
    if (!ch) throw new Error('AMQP not connected')
    ch.publish(exchange, routingKey, content, { persistent: true, ...options, userId: this.user })
    await this.confirmed(ch)
  }

  async close(): Promise<void> {
    this.closing = true
    const conn = this.conn
    this.conn = null
    this.pub = null
    if (conn) await conn.close().catch(() => undefined)
  }
}

/**
 * The exchanges exist (deploy's definitions made them: services declare nothing, DESIGN.md section
 * 17). A passive declare needs no permission; a missing exchange fails the connect, which is retried.
 */
async function checkExchanges(conn: ChannelModel) {
  await checkOn(conn, (ch) =>
    Promise.all([ch.checkExchange(EXCHANGE), ch.checkExchange(DEAD_LETTER_EXCHANGE)]),
  )
}

/**
 * Runs passive checks on a channel of their own (a failed check closes its channel): what is
 * missing is named with where it comes from.
 */
export async function checkOn(conn: ChannelModel, check: (ch: Channel) => Promise<unknown>): Promise<void> {
  const ch = await conn.createChannel()
  ch.on('error', () => undefined) // the rejection below says it
  try {
    await check(ch)
  } catch (err) {
    throw new Error(
      `${(err as Error).message.replace(/^Operation failed: \w+; /, '')}: the broker's topology comes from deploy/rabbitmq/definitions.json (npm start and the test stacks import it)`,
    )
  }
  await ch.close().catch(() => undefined)
}
