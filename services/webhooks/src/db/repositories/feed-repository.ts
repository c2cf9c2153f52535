import type { CloudEvent, Trace } from '@clinic/platform/core'
import { companyRead } from '@clinic/platform/db'
import type { Knex } from 'knex'
import { FEED_CHANNEL } from '../../delivery/channels'
import { isCatalogueType, thinData } from '../../domain/catalogue'
import type { FeedRead, FeedRow, FeedWriter } from '../../domain/feed'
import { queueDeliveries, type DeliveryPair } from './endpoints-repository'

interface EndpointMatch {
  id: string
  event_types: string[]
  codalmacen: string | null
}
const matches = (e: EndpointMatch, event: CloudEvent) =>
  (e.event_types.includes('*') || e.event_types.includes(event.type)) &&
  (e.codalmacen === null || e.codalmacen === (event.codalmacen ?? null))

/**
 * One company's events into its feed in one statement: the company setting (row-level security),
 * the next numbers of its feed (feed_heads, whose row stays locked to commit: a reader never sees
 * n + 1 before n), the rows, the feed's notification, and the company's enabled endpoints (what
 * the events' deliveries are made from). Every part reads the setting's row `c` first: the head's
 * row is made from it, the events from the head, the endpoints laterally after it (fenced, as
 * companyRead), so no policy is checked before the setting.
 */
const STORE_FEED = `
WITH c AS (SELECT set_config('app.idempresa', ?, true) AS tenant OFFSET 0),
h AS (
  INSERT INTO feed_heads (idempresa, last_seq) SELECT c.tenant::integer, ?::bigint FROM c
  ON CONFLICT (idempresa) DO UPDATE SET last_seq = feed_heads.last_seq + EXCLUDED.last_seq
  RETURNING last_seq, pg_notify('${FEED_CHANNEL}', idempresa::text)
),
e AS (
  INSERT INTO events (idempresa, id, seq, type, codalmacen, occurred_at, stored_at, data)
  SELECT ?::integer, r.id, h.last_seq - ?::bigint + r.n, r.type, r.codalmacen, r.occurred_at, ?::timestamptz, r.data
    FROM h, ROWS FROM (jsonb_to_recordset(?::jsonb)
         AS (id uuid, type text, codalmacen text, occurred_at timestamptz, data jsonb))
         WITH ORDINALITY AS r(id, type, codalmacen, occurred_at, data, n)
)
SELECT q.* FROM c CROSS JOIN LATERAL (
  SELECT id, event_types, codalmacen FROM endpoints
   WHERE idempresa = ?::integer AND status = 'enabled' AND c.tenant IS NOT NULL OFFSET 0) q`

/**
 * Stores domain events for the change feed and queues a delivery to each enabled endpoint of the
 * event's company that subscribes to it, in the consumer's transaction (committed with the event
 * ids, so a redelivered event does nothing), each delivery in the trace of its event's handling
 * (`traces`): per company one statement (STORE_FEED), and one more
 * when an endpoint wants one of its events. Companies are taken in id order, so two batches never
 * wait on each other's locks in a cycle.
 */
export async function storeEvents(
  trx: Knex.Transaction,
  events: CloudEvent[],
  now: Date,
  traces: (event: CloudEvent) => Trace = () => ({}),
): Promise<void> {
  const byCompany = new Map<number, CloudEvent[]>()
  for (const e of events.filter((e) => isCatalogueType(e.type)))
    byCompany.set(e.idempresa, [...(byCompany.get(e.idempresa) ?? []), e])
  for (const companyId of [...byCompany.keys()].sort((a, b) => a - b)) {
    const list = byCompany.get(companyId) as CloudEvent[]
    const rows = list.map((e) => ({
      id: e.id,
      type: e.type,
      codalmacen: e.codalmacen ?? null,
      occurred_at: e.time,
      data: thinData(e),
    }))
    const { rows: endpoints } = await trx.raw<{ rows: EndpointMatch[] }>(STORE_FEED, [
      String(companyId),
      list.length,
      companyId,
      list.length,
      now,
      JSON.stringify(rows),
      companyId,
    ])
    const pairs: DeliveryPair[] = endpoints.flatMap((ep) =>
      list
        .filter((e) => matches(ep, e))
        .map((e) => ({
          endpoint_id: ep.id,
          event_id: e.id,
          event_type: e.type,
          traceparent: traces(e).traceparent,
        })),
    )
    await queueDeliveries(trx, companyId, pairs, now)
  }
}

export const feedWriter: FeedWriter<Knex.Transaction> = { store: storeEvents }

/**
 * One page of a company's feed after `after` (a seq), and in the same snapshot the company's head
 * (every seq up to it is committed) and its oldest kept seq (a cursor before it lost events).
 */
export async function readFeed(
  knex: Knex,
  companyId: number,
  f: FeedRead,
): Promise<{
  rows: FeedRow[]
  head: number
  oldest: number | null
}> {
  const page = knex('events')
    .where('idempresa', companyId)
    .whereNotNull('seq')
    .where('seq', '>', f.after)
    .orderBy('seq')
    .limit(f.limit)
    .select('id', 'seq', 'type', 'occurred_at', 'data')
  if (f.types) page.whereIn('type', f.types)
  if (f.centers) page.whereIn('codalmacen', f.centers)
  const query = knex.select(
    knex.raw(`(SELECT coalesce(jsonb_agg(to_jsonb(p) ORDER BY p.seq), '[]') FROM (?) p) AS rows`, [page]),
    knex.raw(`(SELECT last_seq FROM feed_heads h WHERE h.idempresa = ?) AS head`, [companyId]),
    knex.raw(`(SELECT min(seq) FROM events o WHERE o.idempresa = ? AND o.seq IS NOT NULL) AS oldest`, [
      companyId,
    ]),
  )
  const [row] = await companyRead<{
    rows: Array<Record<string, unknown>>
    head: string | null
    oldest: string | null
  }>(knex, companyId, query)
  return {
    rows: (row?.rows ?? []).map((r) => ({
      id: r.id as string,
      seq: Number(r.seq),
      type: r.type as string,
      timestamp: new Date(r.occurred_at as string).toISOString(),
      data: r.data as FeedRow['data'],
    })),
    head: Number(row?.head ?? 0),
    oldest: row?.oldest == null ? null : Number(row.oldest),
  }
}

/** Drops events (and their deliveries) stored before `before`; how many. */
export async function purgeEvents(knex: Knex, before: Date): Promise<number> {
  const { rows } = await knex.raw<{ rows: Array<{ n: string }> }>('SELECT purge_events(?) AS n', [before])
  return Number(rows[0]?.n ?? 0)
}
