import { applyKeyset, companyRead, companyTransaction, runPrepared } from '@clinic/platform/db'
import type { Knex } from 'knex'
import {
  sealEvent,
  toInstant,
  type AuditDraft,
  type AuditEvent,
  type Outcome,
} from '../../domain/audit-event'
import type { AuditEventStore, AuditFilter, AuditTrail } from '../../domain/audit-event-store'
import { AUDIT_KEYSET } from '../../domain/list-audit-events'
import type { ChainAnchor, ChainHead } from '../../domain/verify-chain'
import type { ChainReader } from '../../domain/verify-company'

export interface EventRow {
  idempresa: number
  seq: number
  id: string
  occurred_at: Date
  recorded_at: Date
  action: string
  outcome: Outcome
  resource_type: string | null
  resource_id: string | null
  codalmacen: string | null
  actor_user_id: string | null
  actor_username: string | null
  actor_token_id: string | null
  request_id: string | null
  source: string
  http: AuditEvent['http']
  changes: string[] | null
  prev_hash: string
  hash: string
}

export const fromRow = (r: EventRow): AuditEvent => ({
  idempresa: r.idempresa,
  id: r.id,
  occurred_at: toInstant(r.occurred_at),
  recorded_at: toInstant(r.recorded_at),
  action: r.action,
  outcome: r.outcome,
  resource_type: r.resource_type,
  resource_id: r.resource_id,
  codalmacen: r.codalmacen,
  actor: { user_id: r.actor_user_id, username: r.actor_username, token_id: r.actor_token_id },
  request_id: r.request_id,
  source: r.source,
  http: r.http,
  changes: r.changes,
  seq: r.seq,
  prev_hash: r.prev_hash,
  hash: r.hash,
})

/** The stored row of a sealed event (tests insert rows with it too, as the table owner). */
export const toRow = (e: AuditEvent): EventRow => ({
  idempresa: e.idempresa,
  seq: e.seq,
  id: e.id,
  occurred_at: new Date(e.occurred_at),
  recorded_at: new Date(e.recorded_at),
  action: e.action,
  outcome: e.outcome,
  resource_type: e.resource_type,
  resource_id: e.resource_id,
  codalmacen: e.codalmacen,
  actor_user_id: e.actor.user_id,
  actor_username: e.actor.username,
  actor_token_id: e.actor.token_id,
  request_id: e.request_id,
  source: e.source,
  http: e.http,
  changes: e.changes,
  prev_hash: e.prev_hash,
  hash: e.hash,
})

/** The rows of a JSON array of events' stored rows (toRow), every column given. */
const INSERT_EVENTS = 'INSERT INTO events SELECT * FROM jsonb_populate_recordset(NULL::events, ?::jsonb)'

/**
 * Appends one event to its company's chain, inside the consumer's transaction (see appendEvents).
 */
export async function appendEvent(
  trx: Knex.Transaction,
  draft: AuditDraft,
  chainKey: string,
): Promise<AuditEvent> {
  return (await appendEvents(trx, [draft], chainKey))[0]!
}

/**
 * Appends events to their companies' chains, in the order given within each company, inside the
 * consumer's transaction: per company one head lock (with the database clock), one multi-row
 * insert and one head move. The service role cannot write chain_heads: lock_chain_head (SECURITY
 * DEFINER) creates the genesis head if needed and locks it, so competing consumers append to one
 * company one at a time; advance_chain_head_to moves it past the events inserted here, checking
 * that each links to the one before. Heads are locked in company order, so two consumers never
 * deadlock. Each company's rows are inserted under its own app.idempresa (the policy of events
 * checks it), set anew for each company of the transaction in the statement that locks its head. seq runs 1, 2, 3 ... without gaps (a
 * rolled-back append takes its seqs with it), and recorded_at, from the database clock, never goes
 * back within a company.
 */
export async function appendEvents(
  trx: Knex.Transaction,
  drafts: AuditDraft[],
  chainKey: string,
): Promise<AuditEvent[]> {
  const byCompany = new Map<number, AuditDraft[]>()
  for (const d of drafts) {
    const list = byCompany.get(d.idempresa) ?? []
    list.push(d)
    byCompany.set(d.idempresa, list)
  }
  const sealed = new Map<AuditDraft, AuditEvent>()
  for (const company of [...byCompany.keys()].sort((a, b) => a - b)) {
    // The company's setting (for the rows' policy) and its head's lock in one round trip.
    const { rows } = await trx.raw<{ rows: Array<ChainHeadRow & { now: Date }> }>(
      `SELECT h.seq, h.hash, h.recorded_at, date_trunc('milliseconds', clock_timestamp()) AS now
         FROM (SELECT set_config('app.idempresa', ?, true) AS tenant OFFSET 0) c, lock_chain_head(?) h`,
      [String(company), company],
    )
    const head = rows[0]
    if (!head) throw new Error('chain head vanished')
    const recordedAt = head.now > head.recorded_at ? head.now : head.recorded_at
    let seq = Number(head.seq)
    let prevHash = head.hash
    const events = byCompany.get(company)!.map((draft) => {
      const event = sealEvent(draft, { seq: ++seq, prevHash, recordedAt }, chainKey)
      prevHash = event.hash
      sealed.set(draft, event)
      return event
    })
    // One text whatever the number of rows (a JSON array, unpacked by PostgreSQL), so it is
    // prepared once per connection instead of built by knex and planned anew for every batch size.
    await runPrepared(trx, INSERT_EVENTS, [JSON.stringify(events.map(toRow))])
    await trx.raw('SELECT advance_chain_head_to(?, ?, ?)', [company, seq, prevHash])
  }
  return drafts.map((d) => sealed.get(d)!)
}

/** The trail the consumer appends to, sealing with AUDIT_CHAIN_KEY. */
export const auditTrailRepository = (chainKey: string): AuditTrail<Knex.Transaction> => ({
  append: (trx, drafts) => appendEvents(trx, drafts, chainKey),
})

interface ChainHeadRow {
  idempresa: number
  seq: number
  hash: string
  recorded_at: Date
}

function applyFilter(q: Knex.QueryBuilder, companyId: number, f: AuditFilter): Knex.QueryBuilder {
  q.where('idempresa', companyId)
  if (f.action !== undefined) q.where('action', f.action)
  if (f.resource_type !== undefined) q.where('resource_type', f.resource_type)
  if (f.resource_id !== undefined) q.where('resource_id', f.resource_id)
  if (f.username !== undefined) q.where('actor_username', f.username)
  if (f.outcome !== undefined) q.where('outcome', f.outcome)
  if (f.from !== undefined) q.where('occurred_at', '>=', new Date(f.from))
  if (f.to !== undefined) q.where('occurred_at', '<', new Date(f.to))
  if (f.centers !== null) q.whereIn('codalmacen', f.centers)
  return q
}

export function auditEventRepository(knex: Knex): AuditEventStore {
  return {
    async list(companyId, filter, page) {
      const q = applyFilter(knex('events').select('*'), companyId, filter)
      applyKeyset(q, AUDIT_KEYSET, page.after)
      const rows = await companyRead<EventRow>(knex, companyId, q.offset(page.offset).limit(page.limit))
      // companyRead's outer query promises no order of its own: the page's (seq descending) again.
      return rows.sort((a, b) => b.seq - a.seq).map(fromRow)
    },
    async count(companyId, filter) {
      const q = applyFilter(knex('events').count({ n: '*' }), companyId, filter)
      const [row] = await companyRead<{ n: number }>(knex, companyId, q)
      return Number(row?.n ?? 0)
    },
    async chainLength(companyId) {
      const row = await knex('chain_heads as h')
        .leftJoin('retention_anchors as a', 'a.idempresa', 'h.idempresa')
        .where('h.idempresa', companyId)
        .first<{ n: number } | undefined>(knex.raw('h.seq - coalesce(a.seq, 0) AS n'))
      return Number(row?.n ?? 0)
    },
  }
}

/** What verification reads: the anchor, the head, then every event in seq order, in batches. */
export async function readChainHead(knex: Knex, companyId: number): Promise<ChainHead | null> {
  const row = await knex('chain_heads').where({ idempresa: companyId }).first<ChainHeadRow | undefined>()
  return row ? { seq: row.seq, hash: row.hash } : null
}

export async function readAnchor(knex: Knex, companyId: number): Promise<ChainAnchor | null> {
  const row = await knex('retention_anchors').where({ idempresa: companyId }).first<ChainAnchor | undefined>()
  return row ? { seq: row.seq, hash: row.hash } : null
}

export async function* eventsInSeqOrder(
  knex: Knex,
  companyId: number,
  afterSeq: number,
  untilSeq: number,
  batchSize = 1000,
): AsyncGenerator<AuditEvent> {
  // Keyset on (seq, id), so a repeated seq (a forged row) is read too, and reported.
  let last: [number, string] = [afterSeq, 'ffffffff-ffff-ffff-ffff-ffffffffffff']
  for (;;) {
    const rows: EventRow[] = await companyTransaction(knex, companyId, (trx) =>
      trx('events')
        .where('idempresa', companyId)
        .whereRaw('(seq, id) > (?, ?::uuid)', last)
        .where('seq', '<=', untilSeq)
        .orderBy([
          { column: 'seq', order: 'asc' },
          { column: 'id', order: 'asc' },
        ])
        .limit(batchSize),
    )
    for (const r of rows) yield fromRow(r)
    if (rows.length < batchSize) return
    const tail = rows[rows.length - 1]!
    last = [tail.seq, tail.id]
  }
}

/** Creates the monthly partitions from this month to `monthsAhead` on; returns how many were new. */
export async function ensurePartitions(knex: Knex, monthsAhead = 1): Promise<number> {
  const { rows } = await knex.raw<{ rows: Array<{ n: number }> }>('SELECT ensure_event_partitions(?) AS n', [
    monthsAhead,
  ])
  return rows[0]?.n ?? 0
}

/** The database side of verification (run as the service role: it only reads). */
export function chainReader(knex: Knex): ChainReader {
  return {
    head: (companyId) => readChainHead(knex, companyId),
    anchor: (companyId) => readAnchor(knex, companyId),
    events: (companyId, anchorSeq, untilSeq) => eventsInSeqOrder(knex, companyId, anchorSeq, untilSeq),
    async pastHead(companyId) {
      const { rows } = await companyTransaction(knex, companyId, (trx) =>
        trx.raw<{ rows: Array<{ head_seq: string; n: string }> }>(
          `SELECT coalesce(h.seq, 0) AS head_seq,
                  (SELECT count(*) FROM events e WHERE e.idempresa = ? AND e.seq > coalesce(h.seq, 0)) AS n
             FROM (SELECT 1) one LEFT JOIN chain_heads h ON h.idempresa = ?`,
          [companyId, companyId],
        ),
      )
      return { headSeq: Number(rows[0]!.head_seq), count: Number(rows[0]!.n) }
    },
  }
}
