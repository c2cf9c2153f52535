import { accessBatch, enqueueEvents, type CloudEvent } from '@clinic/platform'
import type { Knex } from 'knex'

/**
 * One group commit of the access log: one outbox row (http.batch) for the batch's events, each of
 * which audit records as a row of the trail. The gateway's one outbox write outside the identity
 * repository, kept in db/ as every outbox write is.
 */
export async function writeAccessBatch(knex: Knex, batch: CloudEvent[]): Promise<void> {
  await enqueueEvents(knex, [accessBatch(batch)])
}
