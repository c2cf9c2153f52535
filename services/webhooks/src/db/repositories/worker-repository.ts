import { companyTransaction, isoInstant } from '@clinic/platform/db'
import { enqueueEvents } from '@clinic/platform/events'
import type { Knex } from 'knex'
import type { ThinData } from '../../domain/catalogue'
import { endpointEvent } from '../../events/endpoint-events'
import { Endpoint } from '../../schemas/endpoint'

/** A claimed delivery and what its attempt needs. */
export interface Job {
  idempresa: number
  id: string
  /** This attempt's number (1 for the first). */
  attempts: number
  leased_until: Date
  event_id: string
  event_type: string
  occurred_at: Date
  data: ThinData
  endpoint_id: string
  url: string
  secret: Buffer
  previous_secret: Buffer | null
  previous_secret_until: Date | null
}

/** Due deliveries for this worker (claim_deliveries in migration 0003). */
export async function claimJobs(
  knex: Knex,
  o: { now: Date; limit: number; perEndpoint: number; leaseMs: number },
): Promise<Job[]> {
  const { rows } = await knex.raw<{ rows: Job[] }>(
    'SELECT * FROM claim_deliveries(?, ?, ?, CAST(? AS interval))',
    [o.now, o.limit, o.perEndpoint, `${o.leaseMs} milliseconds`],
  )
  return rows
}

export interface AttemptRecord {
  status: 'pending' | 'succeeded' | 'failed'
  next_attempt_at: Date | null
  last_status_code: number | null
  last_error: string | null
  last_duration_ms: number
  /** Disable the endpoint, for this reason. */
  disable?: string
  /** When set, disable also when the endpoint had no success since this instant. */
  disableIfNoSuccessSince?: Date
}

const ENDPOINT_COLUMNS = Object.keys(Endpoint.properties)

/**
 * Writes an attempt's outcome, only while the job's lease is this worker's (a worker that lost
 * its lease, and whose job went to another, writes nothing). A success notes the endpoint's last
 * success; a disable writes its reason and the audit event. False when the lease was lost.
 */
export async function recordAttempt(knex: Knex, job: Job, r: AttemptRecord, now: Date): Promise<boolean> {
  return companyTransaction(knex, job.idempresa, async (trx) => {
    const updated = await trx('deliveries')
      .where({ idempresa: job.idempresa, id: job.id, leased_until: job.leased_until })
      .update({
        status: r.status,
        next_attempt_at: r.next_attempt_at,
        leased_until: null,
        last_status_code: r.last_status_code,
        last_error: r.last_error?.slice(0, 500) ?? null,
        last_duration_ms: r.last_duration_ms,
        succeeded_at: r.status === 'succeeded' ? now : null,
      })
    if (!updated) return false
    const endpoint = trx('endpoints').where({ idempresa: job.idempresa, id: job.endpoint_id })
    if (r.status === 'succeeded')
      await endpoint
        .clone()
        .where((q) =>
          q.whereNull('last_success_at').orWhere('last_success_at', '<', new Date(now.getTime() - 60_000)),
        )
        .update({ last_success_at: now })
    const reason =
      r.disable ??
      (r.disableIfNoSuccessSince ? await noSuccessReason(trx, job, r.disableIfNoSuccessSince) : null)
    if (reason) {
      const [row] = await endpoint
        .clone()
        .where('status', 'enabled')
        .update({
          status: 'disabled',
          disabled_reason: reason,
          version: trx.raw('version + 1'),
          updated_at: now,
        })
        .returning(ENDPOINT_COLUMNS)
      if (row) {
        const e = Object.fromEntries(
          ENDPOINT_COLUMNS.map((c) => [c, isoInstant(row[c])]),
        ) as unknown as Endpoint
        await enqueueEvents(trx, [
          endpointEvent(null, 'webhooks.endpoint.disabled', e, ['status'], job.idempresa),
        ])
      }
    }
    return true
  })
}

/** The auto-disable reason when the endpoint had no success since `since` (and existed then). */
async function noSuccessReason(trx: Knex.Transaction, job: Job, since: Date): Promise<string | null> {
  const row = await trx('endpoints')
    .where({ idempresa: job.idempresa, id: job.endpoint_id })
    .where('created_at', '<', since)
    .where((q) => q.whereNull('last_success_at').orWhere('last_success_at', '<', since))
    .first('id')
  return row ? 'no successful delivery for 24 hours and a message used every attempt' : null
}
