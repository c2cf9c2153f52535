import type { Knex } from 'knex'
import type { Logger } from 'pino'
import { startConsumer, type Amqp, type Consumer } from '@clinic/platform'
import { appendEvent } from '../db/repositories/audit-events'
import { toAuditDraft } from '../domain/audit-event'

export const AUDIT_QUEUE = 'audit.events'

export interface AuditConsumerOptions {
  amqp: Amqp
  /** Connected as the service role. */
  knex: Knex
  log: Logger
  queue?: string
  prefetch?: number
}

/**
 * Records every event on `clinic.events` (binding `#`): domain events and the gateway's
 * http.request events. The platform consumer records the event id in processed_events in the same
 * transaction as the append, so a redelivery is stored once, and acks after the commit. Several
 * instances may share the queue; the chain head lock orders appends per company.
 */
export function startAuditConsumer(o: AuditConsumerOptions): Promise<Consumer> {
  return startConsumer({
    amqp: o.amqp,
    knex: o.knex,
    log: o.log,
    queue: o.queue ?? AUDIT_QUEUE,
    bindings: ['#'],
    prefetch: o.prefetch,
    handle: async (event, trx) => {
      const stored = await appendEvent(trx, toAuditDraft(event))
      o.log.debug({ event_id: stored.id, company_id: stored.idempresa, seq: stored.seq }, 'event recorded')
    },
  })
}
