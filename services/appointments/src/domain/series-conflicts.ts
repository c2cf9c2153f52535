import { AppError, type Ctx } from '@clinic/platform/core'
import type { Slot } from '../schemas/availability'
import type { ConflictReason, SeriesConflictItem, SkippedOccurrence } from '../schemas/series'
import type { AppointmentStore, ConflictQuery, Span } from './appointment-store'
import { ALTERNATIVES, ALTERNATIVES_DAYS } from './calendar-rules'
import { SlotConflict, type NotWorking } from './errors'
import type { SeriesTx } from './series-store'

/**
 * Occurrences that cannot be booked or moved (DESIGN.md section 20). Each claim of time is tried
 * in a savepoint, so one refused by the database leaves the transaction going and every conflict
 * is found; the use case then books the others (allow_partial) or rolls everything back and
 * answers 409 series_conflict listing them all, each with the practitioner's next free slots.
 */

/** 409 series_conflict: every occurrence that cannot be booked (or moved), and nothing was written. */
export class SeriesConflict extends AppError {
  constructor(conflicts: SeriesConflictItem[], o: { total: number; changing: boolean }) {
    super({
      status: 409,
      code: 'series_conflict',
      title: 'Occurrences of the series are not available',
      detail: o.changing
        ? `${conflicts.length} of ${o.total} occurrences cannot move: nothing was changed`
        : `${conflicts.length} of ${o.total} occurrences cannot be booked: nothing was booked (allow_partial: true books the others)`,
      extensions: { conflicts },
    })
  }
}

/** A claim refused in the transaction, before it is explained (after the rollback). */
export interface FoundConflict {
  occurrence: number
  span: Span
  patientId: string
  reason: Exclude<ConflictReason, 'unavailable'>
  /** A registered practitioner (free-text ones have no hours and no alternatives). */
  registered: boolean
}

/** Thrown inside the transaction to roll it back; the use case explains and answers 409. */
export class UnclaimedOccurrences extends Error {
  constructor(readonly found: FoundConflict[]) {
    super('occurrences of the series conflict')
  }
}

const NOT_WORKING: Record<NotWorking, FoundConflict['reason']> = {
  inactive: 'inactive',
  outside_hours: 'outside_hours',
  time_off: 'time_off',
}

/**
 * Claims `span` for an occurrence: a registered practitioner's hours first, then `write` (the
 * insert or the move) in a savepoint. The conflict's reason when refused, else what `write` made.
 * `hours: false`: the practitioner is known to have no record (a series of a free-text
 * practitioner asks once, not per occurrence).
 */
export type Claim<T> =
  { made: T; registered: boolean } | { refused: FoundConflict['reason']; registered: boolean }
export async function claimOccurrence<T>(
  tx: SeriesTx,
  span: Span,
  write: () => Promise<T>,
  o: { hours: boolean } = { hours: true },
): Promise<Claim<T>> {
  const working = o.hours ? await tx.workingCheck(span) : null
  const registered = working !== null
  if (working !== null && working !== 'ok') return { refused: NOT_WORKING[working], registered }
  try {
    return { made: await tx.savepoint(write), registered }
  } catch (err) {
    if (!(err instanceof SlotConflict)) throw err
    return { refused: err.holder === 'practitioner' ? 'practitioner_busy' : 'patient_busy', registered }
  }
}

type Reads = Pick<AppointmentStore, 'availability' | 'conflictCenters'>
const overlaps = (a: { starts_at: string; ends_at: string }, b: { starts_at: string; ends_at: string }) =>
  Date.parse(a.starts_at) < Date.parse(b.ends_at) && Date.parse(b.starts_at) < Date.parse(a.ends_at)

/**
 * For a token limited to centers, a conflict caused by something at a center it cannot see names
 * no one (`unavailable`), as a plain booking's slot_conflict does.
 */
async function hidden(
  ctx: Ctx,
  centersOf: (q: ConflictQuery) => Promise<string[]>,
  c: FoundConflict,
): Promise<boolean> {
  const allowed = ctx.auth.allowedCenters
  if (!allowed || (c.reason !== 'practitioner_busy' && c.reason !== 'patient_busy')) return false
  const centers = await centersOf({
    holder: c.reason === 'practitioner_busy' ? 'practitioner' : 'patient',
    practitioner: c.span.practitioner,
    patientId: c.patientId,
    starts_at: c.span.starts_at,
    ends_at: c.span.ends_at,
  })
  return centers.length === 0 || centers.some((center) => !allowed.includes(center))
}

/**
 * Up to 3 next free slots of the (registered) practitioner at that center, the same length, from
 * the occurrence's start (14 days ahead, as a plain booking's), leaving out the times the series
 * itself plans (`planned`): nothing of the series is booked when they are read.
 */
async function alternativesFor(ctx: Ctx, store: Reads, c: FoundConflict, planned: Span[]): Promise<Slot[]> {
  if (!c.registered || c.reason === 'patient_busy' || c.reason === 'inactive') return []
  const start = Date.parse(c.span.starts_at)
  const to = new Date(start + ALTERNATIVES_DAYS * 86_400_000).toISOString()
  const near = planned.filter((p) => p.starts_at < to && p.ends_at > c.span.starts_at)
  const slots = await store.availability(ctx.auth.companyId, {
    center: c.span.center,
    from: c.span.starts_at,
    to,
    practitioners: [c.span.practitioner],
    duration: Math.ceil((Date.parse(c.span.ends_at) - start) / 60_000),
    limit: ALTERNATIVES + near.length,
  })
  return slots.filter((s) => !near.some((p) => overlaps(s, p))).slice(0, ALTERNATIVES)
}

/** The conflicts as the 409 lists them (reads only, after the rollback). */
export async function explainConflicts(
  ctx: Ctx,
  store: Reads,
  found: FoundConflict[],
  planned: Span[],
): Promise<SeriesConflictItem[]> {
  const items: SeriesConflictItem[] = []
  for (const c of found) {
    const unseen = await hidden(ctx, (q) => store.conflictCenters(ctx.auth.companyId, q), c)
    items.push({
      occurrence: c.occurrence,
      starts_at: c.span.starts_at,
      reason: unseen ? 'unavailable' : c.reason,
      alternatives: unseen ? [] : await alternativesFor(ctx, store, c, planned),
    })
  }
  return items
}

/**
 * The occurrences allow_partial leaves out, as the series keeps them (read in the booking's
 * transaction: it holds calendar locks, so it waits for no other connection).
 */
export async function skippedOf(
  ctx: Ctx,
  tx: SeriesTx,
  found: FoundConflict[],
): Promise<SkippedOccurrence[]> {
  const out: SkippedOccurrence[] = []
  for (const c of found)
    out.push({
      occurrence: c.occurrence,
      starts_at: c.span.starts_at,
      reason: (await hidden(ctx, (q) => tx.conflictCenters(q), c)) ? 'unavailable' : c.reason,
    })
  return out
}
