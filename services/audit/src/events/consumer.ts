import type { Knex } from 'knex'
import type { Logger } from 'pino'
import { expandEvent, startConsumer, type Amqp, type Consumer, type EventOrigins } from '@clinic/platform'
import type { FastifyInstance } from 'fastify'
import { toAuditDraft } from '../domain/audit-event'
import type { AuditTrail } from '../domain/audit-event-store'

export const AUDIT_QUEUE = 'audit.events'

export interface AuditConsumerOptions {
  amqp: Amqp
  /** Connected as the service role. */
  knex: Knex
  log: Logger
  /** Its work queue (services.json `consumes`, declared by the broker's topology). */
  queue?: string
  prefetch?: number
  /**
   * Who may publish what (eventOrigins): an event not published by its source's broker user, of a
   * type that source emits, under its type as routing key, is dead-lettered, never recorded.
   */
  origins: EventOrigins
  /** Where events are appended (sealed with AUDIT_CHAIN_KEY, the key kept outside the database). */
  trail: AuditTrail<Knex.Transaction>
  /** The service's metrics (`app.metrics`): refused events are counted there. */
  metrics: FastifyInstance['metrics']
}

/**
 * Records every event on `clinic.events` (binding `#`): domain events and the gateway's access
 * events, which come in batches (`http.batch`: one message and one signature per group commit of
 * the gateway, each of its events a row of the trail). The platform consumer records the event id in processed_events in the same
 * transaction as the append, so a redelivery is stored once, and acks after the commit. Several
 * instances may share the queue; the chain head lock orders appends per company. Only events the
 * broker says their source published are recorded (event-origin.ts): a service's credentials write
 * the trail only as that service, of the types it emits (forgeries land in the dead-letter queue,
 * counted in events_refused_total).
 */
export function startAuditConsumer(o: AuditConsumerOptions): Promise<Consumer> {
  const prefetch = o.prefetch ?? 32
  return startConsumer({
    amqp: o.amqp,
    knex: o.knex,
    log: o.log,
    queue: o.queue ?? AUDIT_QUEUE,
    prefetch,
    origins: o.origins,
    metrics: o.metrics,
    // One message at a time (a batch that failed): an event, or the access events of an http.batch.
    handle: async (event, trx) => {
      const stored = await o.trail.append(trx, expandEvent(event).map(toAuditDraft))
      o.log.debug({ event_id: event.id, recorded: stored.length }, 'event recorded')
    },
    // Under load the events of many requests go in one transaction, one head lock per company.
    batch: {
      size: Math.max(1, Math.floor(prefetch / 2)),
      lingerMs: 5,
      handle: async (events, trx) => {
        await o.trail.append(trx, events.flatMap(expandEvent).map(toAuditDraft))
      },
    },
  })
}
