import { NotFound, uuidv7, type Trace } from '@clinic/platform/core'
import { TenantRepository, companyPage, companyRead, isoInstant, keysetPageParts } from '@clinic/platform/db'
import { enqueueEvents } from '@clinic/platform/events'
import type { Knex } from 'knex'
import { DUE_CHANNEL } from '../../delivery/channels'
import { DELIVERY_KEYSET, ENDPOINT_KEYSET } from '../../domain/keysets'
import type { DeliveryFilter, EndpointFilter, EndpointStore, EndpointTx } from '../../domain/endpoint-store'
import { Delivery, Endpoint } from '../../schemas/endpoint'

const COLUMNS = Object.keys(Endpoint.properties) as Array<keyof Endpoint>
const DELIVERY_COLUMNS = Object.keys(Delivery.properties) as Array<keyof Delivery>

/** A row as the API shows it (also what the worker's disable writes to the audit event). */
export const toEndpoint = (row: Record<string, unknown>): Endpoint =>
  Object.fromEntries(COLUMNS.map((c) => [c, isoInstant(row[c])])) as unknown as Endpoint
const toDelivery = (row: Record<string, unknown>): Delivery =>
  Object.fromEntries(DELIVERY_COLUMNS.map((c) => [c, isoInstant(row[c])])) as unknown as Delivery

/** The company's webhook endpoints and their delivery log (migration 0002), one company per statement. */
export class EndpointsRepository extends TenantRepository<EndpointTx, Endpoint> implements EndpointStore {
  constructor(knex: Knex) {
    super(knex, { name: 'endpoints', columns: COLUMNS, toRow: toEndpoint })
  }

  protected tx(companyId: number, trx: Knex.Transaction): EndpointTx {
    const rows = () => trx('endpoints').where('idempresa', companyId)
    return {
      findById: (id, opts) => this.rowById(trx, id, opts),
      async countLocked() {
        // One creator at a time per company, so two creates never both see 19.
        await trx.raw(`SELECT pg_advisory_xact_lock(hashtext('webhooks.endpoints'), ?)`, [companyId])
        const [row] = await rows().count({ n: '*' })
        return Number(row?.n ?? 0)
      },
      async insert(e, sealed) {
        const [row] = await trx('endpoints')
          .insert({
            idempresa: companyId,
            ...e,
            secret: sealed,
            created_at: trx.raw('now()'),
            updated_at: trx.raw('now()'),
          })
          .returning(COLUMNS)
        return toEndpoint(row)
      },
      async update(id, values) {
        const [row] = await rows()
          .where('id', id)
          .update({ ...values, version: trx.raw('version + 1'), updated_at: trx.raw('now()') })
          .returning(COLUMNS)
        if (!row) throw new NotFound('No such webhook endpoint')
        return toEndpoint(row)
      },
      async remove(id) {
        return (await rows().where('id', id).delete()) > 0
      },
      async sealedSecret(id) {
        const row = await rows().where('id', id).first('secret')
        return (row?.secret as Buffer | undefined) ?? null
      },
      async rotate(id, sealed, previousUntil) {
        await rows()
          .where('id', id)
          .update({
            previous_secret: trx.ref('secret'),
            previous_secret_until: previousUntil,
            secret: sealed,
            updated_at: trx.raw('now()'),
          })
      },
      async queueEvent(event, endpointIds, now, cause) {
        await trx('events')
          .insert({ idempresa: companyId, ...event, data: JSON.stringify(event.data), stored_at: now })
          .onConflict(['idempresa', 'id'])
          .ignore()
        return queueDeliveries(trx, companyId, pairsOf(endpointIds, [event], cause), now)
      },
      retryDelivery: (id, now, cause) => retryDue(trx, companyId, id, now, cause),
      async replay(endpoint, since, now, cause) {
        const events = await trx('events')
          .where('idempresa', companyId)
          .whereNotNull('seq')
          .where('stored_at', '>=', since)
          .modify((q) => matchEndpoint(q, endpoint))
          .select('id', 'type')
        return queueDeliveries(trx, companyId, pairsOf([endpoint.id], events, cause), now)
      },
      publish: (events) => enqueueEvents(trx, events),
    }
  }

  list(companyId: number, f: EndpointFilter) {
    const matching = this.knex('endpoints').where('idempresa', companyId)
    if (f.centers) matching.whereIn('codalmacen', f.centers)
    if (f.status) matching.where('status', f.status)
    return this.page(companyId, keysetPageParts(matching, COLUMNS, ENDPOINT_KEYSET, f))
  }

  async listDeliveries(companyId: number, f: DeliveryFilter) {
    const matching = this.knex('deliveries').where({ idempresa: companyId, endpoint_id: f.endpointId })
    if (f.status) matching.where('status', f.status)
    if (f.eventType) matching.where('event_type', f.eventType)
    const { rows, total } = await companyPage<Record<string, unknown> & { id: unknown }>(
      this.knex,
      companyId,
      keysetPageParts(matching, DELIVERY_COLUMNS, DELIVERY_KEYSET, f),
    )
    return { rows: rows.map(toDelivery), total }
  }

  /** A delivery of the company (any endpoint), or null. */
  async findDelivery(companyId: number, id: string) {
    const [row] = await companyRead<Record<string, unknown>>(
      this.knex,
      companyId,
      this.knex('deliveries').where({ idempresa: companyId, id }).select(DELIVERY_COLUMNS).limit(1),
    )
    return row ? toDelivery(row) : null
  }
}

/**
 * Makes a delivery due now, its attempts now in the trace of the request that asked (`cause`). One
 * in flight (leased) is left to finish, and one already pending for the same event and endpoint (a
 * replay) is that retry: 0 then.
 */
async function retryDue(
  trx: Knex.Transaction,
  companyId: number,
  id: string,
  now: Date,
  cause: Trace,
): Promise<number> {
  const { rows } = await trx.raw<{ rows: unknown[] }>(
    `UPDATE deliveries d SET status = 'pending', next_attempt_at = :now, succeeded_at = NULL,
       traceparent = :traceparent
     WHERE d.idempresa = :company AND d.id = :id
       AND (d.leased_until IS NULL OR d.leased_until <= :now)
       AND NOT EXISTS (SELECT 1 FROM deliveries o WHERE o.idempresa = d.idempresa
         AND o.endpoint_id = d.endpoint_id AND o.event_id = d.event_id AND o.status = 'pending'
         AND o.id <> d.id)
     RETURNING 1`,
    { company: companyId, id, now, traceparent: cause.traceparent ?? null },
  )
  return rows.length
}

/** The events an endpoint subscribes to: its types (or `*`) and its center (or all). */
export function matchEndpoint(q: Knex.QueryBuilder, e: Pick<Endpoint, 'event_types' | 'codalmacen'>) {
  if (!e.event_types.includes('*')) q.whereIn('type', e.event_types)
  if (e.codalmacen !== null) q.where('codalmacen', e.codalmacen)
}

export interface DeliveryPair {
  endpoint_id: string
  event_id: string
  event_type: string
  /** What queued it (the consumer's span of the event, or a request): its attempts' parent. */
  traceparent?: string
}

/**
 * One pending delivery per pair, due now, and the worker woken (on commit). An event already
 * pending for the endpoint is not queued twice (deliveries_pending: a replay over a retry in
 * progress sends it once).
 */
export async function queueDeliveries(
  trx: Knex.Transaction,
  companyId: number,
  pairs: DeliveryPair[],
  now: Date,
): Promise<number> {
  if (!pairs.length) return 0
  // The worker is woken (DUE_CHANNEL) in the same statement, when something was queued.
  const { rows } = await trx.raw<{ rows: Array<{ n: string }> }>(
    `WITH q AS (
       INSERT INTO deliveries (idempresa, id, endpoint_id, event_id, event_type, next_attempt_at, created_at,
         traceparent)
       SELECT :company, r.id, r.endpoint_id, r.event_id, r.event_type, :now, :now, r.traceparent
       FROM jsonb_to_recordset(CAST(:rows AS jsonb))
         AS r(id uuid, endpoint_id uuid, event_id uuid, event_type text, traceparent text)
       ON CONFLICT (idempresa, endpoint_id, event_id) WHERE status = 'pending' DO NOTHING
       RETURNING 1),
     n AS (SELECT count(*) AS n FROM q)
     SELECT n.n, (SELECT pg_notify('${DUE_CHANNEL}', '') WHERE n.n > 0) AS woken FROM n`,
    { company: companyId, now, rows: JSON.stringify(pairs.map((p) => ({ id: uuidv7(), ...p }))) },
  )
  return Number(rows[0]?.n ?? 0)
}

const pairsOf = (
  endpointIds: string[],
  events: Array<{ id: string; type: string }>,
  cause: Trace,
): DeliveryPair[] =>
  endpointIds.flatMap((endpoint_id) =>
    events.map((e) => ({ endpoint_id, event_id: e.id, event_type: e.type, traceparent: cause.traceparent })),
  )
