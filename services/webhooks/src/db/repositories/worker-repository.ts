import { setCompany } from '@clinic/platform/db'
import { enqueueEvents } from '@clinic/platform/events'
import type { Knex } from 'knex'
import type { Job, JobStore, Outcome } from '../../delivery/job-store'
import { endpointEvent } from '../../events/endpoint-events'
import { Endpoint } from '../../schemas/endpoint'
import { toEndpoint } from './endpoints-repository'

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

const ENDPOINT_COLUMNS = Object.keys(Endpoint.properties)

/**
 * Writes the outcomes of many attempts in one transaction (one commit for all: the worker's group
 * commit), each only while its job's lease is still this worker's (a worker that lost its lease,
 * and whose job went to another, writes nothing). Successes note their endpoints' last success; a
 * disable writes its reason and the audit event. Answers the ids that were written.
 */
export async function recordAttempts(knex: Knex, outcomes: Outcome[]): Promise<Set<string>> {
  const byCompany = new Map<number, Outcome[]>()
  for (const o of outcomes) byCompany.set(o.job.idempresa, [...(byCompany.get(o.job.idempresa) ?? []), o])
  return knex.transaction(async (trx) => {
    const written = new Set<string>()
    for (const [companyId, list] of byCompany) {
      await setCompany(trx, companyId)
      const ids = await writeOutcomes(trx, companyId, list)
      const kept = list.filter((o) => ids.has(o.job.id))
      await noteSuccesses(trx, companyId, kept)
      for (const o of kept) await disableIfDue(trx, o)
      for (const id of ids) written.add(id)
    }
    return written
  })
}

async function writeOutcomes(
  trx: Knex.Transaction,
  companyId: number,
  list: Outcome[],
): Promise<Set<string>> {
  const rows = list.map(({ job, record: r, now }) => ({
    id: job.id,
    leased_until: job.leased_until,
    status: r.status,
    next_attempt_at: r.next_attempt_at,
    last_status_code: r.last_status_code,
    last_error: r.last_error?.slice(0, 500) ?? null,
    last_duration_ms: r.last_duration_ms,
    succeeded_at: r.status === 'succeeded' ? now : null,
  }))
  const { rows: done } = await trx.raw<{ rows: Array<{ id: string }> }>(
    `UPDATE deliveries d SET status = r.status, next_attempt_at = r.next_attempt_at, leased_until = NULL,
       last_status_code = r.last_status_code, last_error = r.last_error,
       last_duration_ms = r.last_duration_ms, succeeded_at = r.succeeded_at
     FROM jsonb_to_recordset(CAST(? AS jsonb)) AS r(id uuid, leased_until timestamptz, status text,
       next_attempt_at timestamptz, last_status_code integer, last_error text, last_duration_ms integer,
       succeeded_at timestamptz)
     WHERE d.idempresa = ? AND d.id = r.id AND d.leased_until = r.leased_until
     RETURNING d.id`,
    [JSON.stringify(rows), companyId],
  )
  return new Set(done.map((d) => d.id))
}

/** last_success_at of the endpoints that had one, written at most once a minute each. */
async function noteSuccesses(trx: Knex.Transaction, companyId: number, kept: Outcome[]) {
  const ok = kept.filter((o) => o.record.status === 'succeeded')
  if (!ok.length) return
  const now = new Date(Math.max(...ok.map((o) => o.now.getTime())))
  await trx('endpoints')
    .where('idempresa', companyId)
    .whereIn('id', [...new Set(ok.map((o) => o.job.endpoint_id))])
    .where((q) =>
      q.whereNull('last_success_at').orWhere('last_success_at', '<', new Date(now.getTime() - 60_000)),
    )
    .update({ last_success_at: now })
}

/** 410 Gone, or a message out of attempts on an endpoint without success for a day: disabled. */
async function disableIfDue(trx: Knex.Transaction, { job, record: r, now }: Outcome) {
  const reason =
    r.disable ??
    (r.disableIfNoSuccessSince ? await noSuccessReason(trx, job, r.disableIfNoSuccessSince) : null)
  if (!reason) return
  const [row] = await trx('endpoints')
    .where({ idempresa: job.idempresa, id: job.endpoint_id, status: 'enabled' })
    .update({ status: 'disabled', disabled_reason: reason, version: trx.raw('version + 1'), updated_at: now })
    .returning(ENDPOINT_COLUMNS)
  if (!row) return
  await enqueueEvents(trx, [
    endpointEvent(null, 'webhooks.endpoint.disabled', toEndpoint(row), ['status'], job.idempresa),
  ])
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

/** The delivery worker's store. */
export const jobRepository = (knex: Knex): JobStore => ({
  claim: (o) => claimJobs(knex, o),
  record: (outcomes) => recordAttempts(knex, outcomes),
})
