import { isoInstant, runPrepared, runPreparedQuery } from '@clinic/platform/db'
import type { Knex } from 'knex'
import type { AvailabilityFilter as StoreFilter, ConflictQuery, Span } from '../../domain/appointment-store'
import type { NotWorking } from '../../domain/errors'
import type { Hold } from '../../schemas/availability'

/**
 * The statements of the calendar (migration 0005): free slots, whether a registered practitioner
 * works at a time, and what takes a time. Set-based: availability never loads appointments into
 * the process. Named bindings are cast with CAST(... AS type), never `::`, which knex would read
 * as a binding of its own. Also the calendar's rows as the API shows them (holds, slots).
 */

/** `now`: slots before it are past, holds expiring before it block nothing. */
export type AvailabilityFilter = StoreFilter & { now: Date }

/**
 * What blocks a time near [from, to + 12 h): the company's live claims and time off there, read in
 * one pass (not one probe per practitioner), kept by practitioner as one multirange each.
 */
const BUSY = `
  SELECT b.practitioner, range_agg(b.during) AS during FROM (
    SELECT c.practitioner, c.during FROM calendar c
    WHERE setting.tenant IS NOT NULL AND c.idempresa = :company
      -- claims last at most 12 h (appointments and holds alike): an index range (calendar_by_starts_at;
      -- starts_at is lower(during), stored: row-level security lets no lower() into an index scan)
      AND c.starts_at >= CAST(:from AS timestamptz) - interval '12 hours'
      AND c.starts_at < CAST(:to AS timestamptz) + interval '12 hours'
      AND c.during && tstzrange(CAST(:from AS timestamptz), CAST(:to AS timestamptz) + interval '12 hours')
      AND (c.expires_at IS NULL OR c.expires_at > CAST(:now AS timestamptz))
    UNION ALL
    SELECT t.practitioner, tstzrange(t.starts_at, t.ends_at) FROM time_off t
    WHERE setting.tenant IS NOT NULL AND t.idempresa = :company
      AND tstzrange(t.starts_at, t.ends_at) && tstzrange(CAST(:from AS timestamptz), CAST(:to AS timestamptz) + interval '12 hours')
  ) b GROUP BY b.practitioner`

/**
 * An instant as the API shows it (RFC 3339 in UTC with milliseconds, as Date#toISOString), written
 * by PostgreSQL: a page of slots goes to the response as the driver reads it, with no Date parsed
 * and formatted again per instant.
 */
// (Its colons quoted: a colon before a letter would read as a named binding.)
const ISO = `'YYYY-MM-DD"T"HH24":"MI":"SS.MS"Z"'`

/**
 * The slot grid of the asked practitioners at the center (each working window from its start, every
 * slot_minutes, slots that fit in it), minus the past, minus what is busy: `busy` is computed once
 * (MATERIALIZED: inlined, the planner recomputed it for every working window) and each slot is one
 * in-memory test against its practitioner's multirange, not an index probe.
 *
 * The company's setting comes first, in the same statement (as platform's companyRead): one round
 * trip and its own transaction, no BEGIN, set_config and COMMIT around it. Every part that reads a
 * table under row-level security refers to the setting's row (`setting.tenant IS NOT NULL`, always
 * true), so it runs laterally, after set_config; the setting's row is fenced (OFFSET 0) and so is
 * the page (its LIMIT). The outer query restates the page's order (a join keeps none).
 */
const PAGE = `
  WITH asked AS (
    SELECT p.id, p.time_zone, p.slot_minutes, p.working_hours,
           make_interval(mins => coalesce(CAST(:duration AS integer), p.slot_minutes)) AS length
    FROM practitioners p
    WHERE setting.tenant IS NOT NULL AND p.idempresa = :company AND p.active
      AND p.working_hours @> CAST(:at_center AS jsonb)
      AND (CAST(:ids AS text[]) IS NULL OR p.id = ANY (CAST(:ids AS text[])))
  ),
  slots AS (
    SELECT a.id AS practitioner, s AS starts_at, s + a.length AS ends_at
    FROM asked a
    CROSS JOIN LATERAL working_windows(a.working_hours, a.time_zone, CAST(:from AS timestamptz),
                                       CAST(:to AS timestamptz) + a.length) w
    CROSS JOIN LATERAL generate_series(lower(w.during), upper(w.during) - a.length,
                                       make_interval(mins => a.slot_minutes)) s
    WHERE w.codalmacen = :center
      AND s >= greatest(CAST(:from AS timestamptz), CAST(:now AS timestamptz))
      AND s < CAST(:to AS timestamptz)
  ),
  busy AS MATERIALIZED (${BUSY})
  SELECT s.practitioner, CAST(:center AS text) AS codalmacen,
         to_char(s.starts_at AT TIME ZONE 'UTC', ${ISO}) AS starts_at,
         to_char(s.ends_at AT TIME ZONE 'UTC', ${ISO}) AS ends_at
  FROM slots s LEFT JOIN busy b ON b.practitioner = s.practitioner
  WHERE b.during IS NULL OR NOT b.during && tstzrange(s.starts_at, s.ends_at)
  ORDER BY s.starts_at, s.practitioner
  LIMIT :limit`
const AVAILABILITY = `
  SELECT q.practitioner, q.codalmacen, q.starts_at, q.ends_at
  FROM (SELECT set_config('app.idempresa', CAST(:company AS text), true) AS tenant OFFSET 0) setting
  CROSS JOIN LATERAL (${PAGE}) q
  -- The same order as the page's: fixed-width RFC 3339 text sorts as its instants do.
  ORDER BY q.starts_at COLLATE "C", q.practitioner`

/**
 * AVAILABILITY with `?` placeholders, bound to a request's values: one text for every request, so it
 * runs as a prepared statement (runPrepared) that PostgreSQL parses and plans once per connection.
 * Its generic plan (chosen after five executions) is the custom plans' shape: the parameters only
 * bound ranges and pick the company, whose rows row-level security reads alike for any value.
 */
const availability = positional(AVAILABILITY)

/**
 * A text with knex's named bindings (`:name`) made positional once: what binds it to values, the
 * text (`?` placeholders) always the same and the bindings in its placeholders' order.
 */
function positional(
  text: string,
): (values: Record<string, Knex.Value>) => { sql: string; bindings: Knex.Value[] } {
  const names: string[] = []
  // As knex reads named bindings: `:name`, never part of a `::` cast (the texts above use none).
  const sql = text.replace(/(?<!:):(\w+)(?!:)/g, (_, name: string) => (names.push(name), '?'))
  return (values) => ({ sql, bindings: names.map((n) => values[n] as Knex.Value) })
}

/**
 * The statement availability sends for one stretch [from, to), as text and bindings (the benchmark
 * explains this very statement; the repository asks stretch after stretch until it has `limit`
 * slots).
 */
export function availabilityQuery(
  companyId: number,
  f: AvailabilityFilter,
): { sql: string; bindings: Knex.Value[] } {
  return availability({
    company: companyId,
    center: f.center,
    at_center: JSON.stringify([{ codalmacen: f.center }]),
    ids: f.practitioners ?? null,
    duration: f.duration ?? null,
    from: f.from,
    to: f.to,
    now: f.now.toISOString(),
    limit: f.limit,
  })
}

/** availabilityQuery as a knex statement (`.toSQL().toNative()` gives what PostgreSQL receives). */
export function availabilityStatement(db: Knex, companyId: number, f: AvailabilityFilter): Knex.Raw {
  const { sql, bindings } = availabilityQuery(companyId, f)
  return db.raw(sql, bindings)
}

/**
 * The stretches availability reads, earliest first: a day, then two, four... up to `to`. The first
 * page of a busy center is in its first day, and "next available" (`limit=1`) rarely needs more;
 * a month with nothing free takes five statements, not thirty-one.
 */
export function* stretches(from: string, to: string): Generator<{ from: string; to: string }> {
  const end = Date.parse(to)
  let start = Date.parse(from)
  for (let days = 1; start < end; days *= 2) {
    const until = Math.min(end, start + days * 86_400_000)
    yield { from: new Date(start).toISOString(), to: new Date(until).toISOString() }
    start = until
  }
}

/** A hold's columns as the API shows them (the calendar keeps its time as one range). */
export const holdColumns = (db: Knex | Knex.Transaction) => [
  'id',
  'practitioner',
  'codalmacen',
  db.raw('lower(during) AS starts_at'),
  db.raw('upper(during) AS ends_at'),
  'patient_id',
  'expires_at',
  'created_at',
]
/** An instant column of a row (never null where this is used). */
const iso = (v: unknown) => isoInstant(v) as string
export function toHold(row: Record<string, unknown>): Hold {
  return {
    id: String(row.id),
    practitioner: String(row.practitioner),
    codalmacen: String(row.codalmacen),
    starts_at: iso(row.starts_at),
    ends_at: iso(row.ends_at),
    patient_id: (row.patient_id as string | null) ?? null,
    expires_at: iso(row.expires_at),
    created_at: iso(row.created_at),
  }
}

const WORKING = `
  SELECT p.active,
    coalesce((
      SELECT range_agg(w.during)
      FROM working_windows(p.working_hours, p.time_zone, CAST(:starts AS timestamptz), CAST(:ends AS timestamptz)) w
      WHERE w.codalmacen = :center
    ) @> tstzrange(CAST(:starts AS timestamptz), CAST(:ends AS timestamptz)), false) AS in_hours,
    EXISTS (
      SELECT 1 FROM time_off t
      WHERE t.idempresa = p.idempresa AND t.practitioner = p.id
        AND tstzrange(t.starts_at, t.ends_at) && tstzrange(CAST(:starts AS timestamptz), CAST(:ends AS timestamptz))
    ) AS off
  FROM practitioners p WHERE p.idempresa = :company AND p.id = :practitioner`
const working = positional(WORKING)

/**
 * Whether `practitioner` works at `center` for the whole of [starts, ends) (windows that touch, as
 * 09:00-12:00 and 12:00-14:00, count as one): null when no such practitioner is registered
 * (free-text practitioners book as before), else why not, or 'ok'. Prepared (runPrepared).
 */
export async function workingCheck(
  db: Knex | Knex.Transaction,
  companyId: number,
  s: Span,
): Promise<NotWorking | 'ok' | null> {
  const { sql, bindings } = working({
    company: companyId,
    practitioner: s.practitioner,
    center: s.center,
    starts: s.starts_at,
    ends: s.ends_at,
  })
  const [row] = await runPrepared<{ active: boolean; in_hours: boolean; off: boolean }>(db, sql, bindings)
  if (!row) return null
  if (!row.active) return 'inactive'
  if (!row.in_hours) return 'outside_hours'
  return row.off ? 'time_off' : 'ok'
}

/**
 * Claims near [starts, ends), on the stored `starts_at` (a claim lasts at most 12 h, so one that
 * overlaps starts in (starts - 12 h, ends)): an index range of the practitioner's calendar
 * (calendar_by_practitioner). Under row-level security only leakproof conditions reach an index
 * scan, and neither `&&` nor lower() is one: with `during &&` alone every claim the practitioner
 * ever had was read. The statements still test `during &&` for the overlap itself.
 */
const NEAR = `starts_at > CAST(? AS timestamptz) - interval '12 hours' AND starts_at < CAST(? AS timestamptz)`

/**
 * The centers of what takes [starts, ends) from the practitioner (live claims) or the patient
 * (appointments that hold their slot), `self` (an appointment being moved) aside. Appointments
 * too last at most 12 h (appointments_length).
 */
export function conflictQuery(db: Knex, companyId: number, c: ConflictQuery & { now: Date }) {
  const near = [c.starts_at, c.ends_at]
  const range = db.raw('tstzrange(CAST(? AS timestamptz), CAST(? AS timestamptz))', near)
  const q =
    c.holder === 'practitioner'
      ? db('calendar')
          .where({ idempresa: companyId, practitioner: c.practitioner })
          .whereRaw(NEAR, near)
          .whereRaw('during && ?', [range])
          .where((w) => w.whereNull('expires_at').orWhere('expires_at', '>', c.now))
      : db('appointments')
          .where({ idempresa: companyId, patient_id: c.patientId ?? null })
          .whereNotIn('status', ['cancelled', 'no_show'])
          .whereRaw(NEAR, near)
          .whereRaw('tstzrange(starts_at, ends_at) && ?', [range])
  if (c.self) q.whereNot('id', c.self)
  return q.distinct('codalmacen')
}

/**
 * The expired holds of the practitioner that overlap [starts, ends): a claim of that time removes
 * them first (purgeExpiredHolds): an expired hold blocks nothing, even before anything removed it.
 */
export function purgeQuery(
  db: Knex,
  companyId: number,
  c: { practitioner: string; starts_at: string; ends_at: string; now: Date },
) {
  const near = [c.starts_at, c.ends_at]
  return db('calendar')
    .where({ idempresa: companyId, practitioner: c.practitioner, kind: 'hold' })
    .where('expires_at', '<=', c.now)
    .whereRaw(NEAR, near)
    .whereRaw('during && tstzrange(CAST(? AS timestamptz), CAST(? AS timestamptz))', near)
    .delete()
}

/** Runs purgeQuery in the claim's transaction, prepared. */
export async function purgeExpiredHolds(
  trx: Knex.Transaction,
  companyId: number,
  c: { practitioner: string; starts_at: string; ends_at: string; now: Date },
) {
  await runPreparedQuery(trx, purgeQuery(trx, companyId, c))
}

/** How many of the company's other expired holds a new hold clears away. */
const SWEEP_BATCH = 50

/**
 * Clears away some of the company's other expired holds (they block nothing, they only take room),
 * so the calendar keeps no dead rows without a timer: each new hold sweeps a few. SKIP LOCKED: a
 * row another transaction is removing is left to it, so this never waits and never deadlocks.
 * Prepared.
 */
export async function sweepExpiredHolds(trx: Knex.Transaction, companyId: number, now: Date) {
  await runPrepared(
    trx,
    `DELETE FROM calendar WHERE idempresa = ? AND id IN (
       SELECT id FROM calendar
       WHERE idempresa = ? AND kind = 'hold' AND expires_at <= CAST(? AS timestamptz)
       LIMIT ${SWEEP_BATCH} FOR UPDATE SKIP LOCKED)`,
    [companyId, companyId, now.toISOString()],
  )
}
