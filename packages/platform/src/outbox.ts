import type { Knex } from 'knex'
import type { Logger } from 'pino'
import type { Amqp } from './amqp'
import {
  ATTR_MESSAGING_DESTINATION_NAME,
  ATTR_MESSAGING_MESSAGE_ID,
  ATTR_MESSAGING_OPERATION_NAME,
  ATTR_MESSAGING_OPERATION_TYPE,
  ATTR_MESSAGING_RABBITMQ_DESTINATION_ROUTING_KEY,
  ATTR_MESSAGING_SYSTEM,
} from '@opentelemetry/semantic-conventions/incubating'
import { EXCHANGE } from './amqp'
import { OUTBOX_ROWS } from './db/company'
import { runPrepared } from './db/prepared'
import type { CloudEvent } from './events'
import { Listener } from './listener'
import { SpanKind, endSpan, startSpan, traceOf, tracingOn, type Span } from './tracing'
import { WakeLoop } from './wake-loop'

/**
 * Writes events in the caller's transaction: they exist exactly when the change commits. Or, given
 * the pool itself, on their own: one statement commits the whole batch or none of it.
 * One statement and one parameter whatever the batch size (a JSON array, unpacked by PostgreSQL).
 * The relay publishes them as this service's broker user, which is what consumers believe about
 * their origin (event-origin.ts), whatever the row says. Prepared (runPrepared): one text for every
 * call, parsed and planned once per connection (the gateway writes one per group commit).
 */
export async function enqueueEvents(trx: Knex | Knex.Transaction, events: CloudEvent[]): Promise<void> {
  if (!events.length) return
  await runPrepared(trx, OUTBOX_ROWS, [JSON.stringify(events)])
}

/**
 * The relay's pass: the oldest pending rows, taken and deleted (prepared: one text, every pass),
 * with each event's trace context (its CloudEvents extensions) for the publish spans.
 */
const TAKE_ROWS = `DELETE FROM outbox WHERE id IN (
     SELECT id FROM outbox WHERE published_at IS NULL ORDER BY id LIMIT ? FOR UPDATE SKIP LOCKED)
   RETURNING id, event_id, type, payload::text AS payload,
             payload->>'traceparent' AS traceparent, payload->>'tracestate' AS tracestate,
             set_config('synchronous_commit', 'off', true) AS commit_mode`

interface TakenRow {
  id: string
  event_id: string
  type: string
  payload: string
  traceparent: string | null
  tracestate: string | null
}

/**
 * The publish span of an event that has a trace (messaging semantic conventions), while spans are
 * recorded: a child of the span that made the event, and the parent its consumers' spans take from
 * the message's `traceparent` header. Without recording, no span and no header: the consumers take
 * the event's own trace context.
 */
function publishSpan(row: TakenRow): Span | null {
  if (!row.traceparent || !tracingOn()) return null
  return startSpan(`publish ${EXCHANGE}`, {
    kind: SpanKind.PRODUCER,
    parent: { traceparent: row.traceparent, tracestate: row.tracestate ?? undefined },
    attributes: {
      [ATTR_MESSAGING_SYSTEM]: 'rabbitmq',
      [ATTR_MESSAGING_OPERATION_TYPE]: 'send',
      [ATTR_MESSAGING_OPERATION_NAME]: 'publish',
      [ATTR_MESSAGING_DESTINATION_NAME]: EXCHANGE,
      [ATTR_MESSAGING_RABBITMQ_DESTINATION_ROUTING_KEY]: row.type,
      [ATTR_MESSAGING_MESSAGE_ID]: row.event_id,
    },
  })
}

export interface RelayOptions {
  knex: Knex
  /** The service schema; its outbox trigger notifies `outbox_<schema>`. */
  schema: string
  databaseUrl: string
  amqp: Amqp
  log: Logger
  batchSize?: number
  pollMs?: number
  /**
   * The least time between two passes (default 0): where commits come many a second (the gateway's
   * access events), a pass publishes several of them, for one transaction and one confirm.
   */
  minPassIntervalMs?: number
}

/**
 * Publishes outbox rows with publisher confirms, then deletes them. Several relays (replicas)
 * can run at once: `FOR UPDATE SKIP LOCKED` gives each its own rows. LISTEN/NOTIFY wakes it as
 * soon as a transaction commits; a poll covers missed notifications and broker outages.
 */
export class OutboxRelay {
  private listener: Listener | null = null
  private readonly loop: WakeLoop
  private readonly batchSize: number
  private readonly pollMs: number

  constructor(private readonly o: RelayOptions) {
    this.batchSize = o.batchSize ?? 100
    this.pollMs = o.pollMs ?? 1000
    this.loop = new WakeLoop({
      pass: () => this.drain(),
      pollMs: this.pollMs,
      minIntervalMs: o.minPassIntervalMs,
      // { err }, never err.message: the logger's serializer keeps a database error to an allow-list
      // (knex writes the statement with its bound values into the message).
      onError: (err) => this.o.log.warn({ err }, 'outbox relay paused; will retry'),
    })
  }

  async start(): Promise<void> {
    this.listener = new Listener({
      databaseUrl: this.o.databaseUrl,
      channel: `outbox_${this.o.schema}`,
      name: `${this.o.schema}-relay`,
      log: this.o.log,
      retryMs: this.pollMs,
      onNotify: () => this.wake(),
    })
    await this.listener.start()
    this.loop.start()
  }

  /** Drains now (or right after the drain under way). */
  wake(): void {
    this.loop.wake()
  }

  /** Publishes until nothing is pending. Returns the number of events published. */
  async drain(): Promise<number> {
    let total = 0
    while (!this.loop.stopping && this.o.amqp.connected) {
      const sent = await this.o.knex.transaction(async (trx) => {
        // Taken and deleted in one statement, published before the commit: a failed publish rolls
        // the delete back, and the rows wait for the next pass. Deleted, not marked: an update
        // leaves a dead row per event, and with autovacuum behind (or off) the table and this
        // query grow without end. The trail is audit's, not ours. The payload goes out as the text
        // PostgreSQL holds: no parse and re-serialise per event. The commit need not wait for the
        // disk (synchronous_commit off, for this transaction only, set by the statement itself):
        // a delete lost in a crash only publishes its events again, and consumers are idempotent.
        const rows = await runPrepared<TakenRow>(trx, TAKE_ROWS, [this.batchSize])
        if (!rows.length) return 0
        // In the order they were written (RETURNING promises none).
        rows.sort((a, b) => Number(a.id) - Number(b.id))
        const spans = rows.map(publishSpan)
        try {
          await this.o.amqp.publishRaw(
            rows.map((r, i) => {
              const span = spans[i]
              return {
                id: r.event_id,
                type: r.type,
                body: Buffer.from(r.payload),
                ...(span ? { headers: traceOf(span) } : {}),
              }
            }),
          )
        } catch (err) {
          for (const span of spans) if (span) endSpan(span, err)
          throw err
        }
        for (const span of spans) if (span) endSpan(span)
        return rows.length
      })
      total += sent
      if (sent < this.batchSize) break
    }
    return total
  }

  async pending(): Promise<number> {
    const [row] = await this.o.knex('outbox').whereNull('published_at').count({ n: '*' })
    return Number(row?.n ?? 0)
  }

  async stop(): Promise<void> {
    await this.loop.stop()
    await this.listener?.stop()
  }
}
