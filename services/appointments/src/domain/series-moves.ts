import {
  ValidationFailed,
  VersionMismatch,
  findVisible,
  ifMatchAllows,
  visibleCenters,
  type CloudEvent,
  type Ctx,
  type IdempotencyKey,
  type StoredResponse,
} from '@clinic/platform/core'
import { appointmentUpdated } from '../events/appointment-events'
import type { Appointment, AppointmentFields } from '../schemas/appointment'
import type { Series } from '../schemas/series'
import type { Span } from './appointment-store'
import { spanOf } from './book-appointment'
import { InvalidTransition } from './errors'
import {
  SeriesConflict,
  UnclaimedOccurrences,
  claimOccurrence,
  explainConflicts,
  type FoundConflict,
} from './series-conflicts'
import { SERIES_NOT_FOUND, present, seriesSeenBy } from './series-read'
import type { Occurrence, SeriesRow, SeriesStore, SeriesTx } from './series-store'
import { RESCHEDULABLE_STATUSES } from './status'

/**
 * What changes of a series share (PATCH and cancel, DESIGN.md section 20): the series and its
 * occurrences locked in one transaction, each change of an occurrence written as an ordinary
 * appointment change (its own appointment.updated; a move claims its time in a savepoint), every
 * refused move collected, and then either all of it committed or none (409 series_conflict).
 */

/** One change of a series in progress. */
export interface Work {
  ctx: Ctx
  tx: SeriesTx
  /** The series as it was when locked. */
  series: SeriesRow
  now: number
  found: FoundConflict[]
  /** The times the change claims (the 409's alternatives leave them out). */
  planned: Span[]
  events: CloudEvent[]
}

/** Fields whose change claims time (or place) from a practitioner. */
const MOVES: ReadonlyArray<keyof AppointmentFields> = ['practitioner', 'codalmacen', 'starts_at', 'ends_at']

/**
 * Whether an occurrence is as its series plans it: not changed on its own through the series
 * (`this`), nor moved by a plain PATCH (its start is not its planned start, or its length,
 * practitioner or center are not the series').
 */
export function followsPlan(a: Occurrence, s: SeriesRow): boolean {
  return (
    !a.series_exception &&
    a.starts_at === a.recurrence_id &&
    Date.parse(a.ends_at) - Date.parse(a.starts_at) === s.duration_minutes * 60_000 &&
    a.practitioner === s.practitioner &&
    a.codalmacen === s.codalmacen
  )
}

/** A re-plan (all, following) changes only scheduled or confirmed occurrences yet to start that follow the plan. */
export const replannable = (a: Occurrence, s: SeriesRow, now: number) =>
  RESCHEDULABLE_STATUSES.includes(a.status) && Date.parse(a.starts_at) > now && followsPlan(a, s)

/** A cancellation (following, all) cancels scheduled or confirmed occurrences yet to start. */
export const cancellable = (a: Occurrence, now: number) =>
  RESCHEDULABLE_STATUSES.includes(a.status) && Date.parse(a.starts_at) > now

/** The occurrence `n` of the series (scope this), or a 400 naming /occurrence. */
export function occurrenceOf(series: SeriesRow, occurrences: Occurrence[], n: number): Occurrence {
  const found = occurrences.find((a) => a.occurrence === n)
  if (found) return found
  const skipped = series.skipped.some((s) => s.occurrence === n)
  throw new ValidationFailed([
    {
      path: '/occurrence',
      message: skipped ? 'was not booked (it is among skipped)' : 'is not an occurrence of this series',
    },
  ])
}

/** Only a scheduled or confirmed occurrence changes on its own (409 invalid_transition). */
export function assertChangeable(a: Occurrence): void {
  if (!RESCHEDULABLE_STATUSES.includes(a.status))
    throw new InvalidTransition(
      `Occurrence ${a.occurrence} is ${a.status}: only scheduled or confirmed occurrences change`,
    )
}

/**
 * Writes `values` to occurrence `a` as an appointment change: nothing when no value differs; a
 * move claims its time (the practitioner's hours, then the update in a savepoint) and a refused
 * one is collected in `w.found`. Answers whether it was written.
 */
export async function writeOccurrence(
  w: Work,
  a: Occurrence,
  values: Partial<AppointmentFields>,
): Promise<boolean> {
  const diff: Partial<AppointmentFields> = {}
  for (const [k, v] of Object.entries(values) as Array<[keyof AppointmentFields, unknown]>)
    if (v !== undefined && v !== a[k]) (diff as Record<string, unknown>)[k] = v
  const changes = Object.keys(diff)
  if (!changes.length) return false
  let updated: Appointment
  if (changes.some((c) => MOVES.includes(c as keyof AppointmentFields))) {
    const span = spanOf({ ...a, ...diff })
    w.planned.push(span)
    const claim = await claimOccurrence(w.tx, span, () => w.tx.update(a, diff))
    if (!('made' in claim)) {
      w.found.push({
        occurrence: a.occurrence,
        span,
        patientId: a.patient_id,
        reason: claim.refused,
        registered: claim.registered,
      })
      return false
    }
    updated = claim.made
  } else updated = await w.tx.update(a, diff)
  const status = diff.status ? { from: a.status, to: diff.status } : null
  w.events.push(appointmentUpdated(w.ctx, updated, changes, status))
  return true
}

/** Later moves first when the change ends occurrences later, so a series never collides with itself. */
export function inMoveOrder(todo: Occurrence[], endsLater: boolean): Occurrence[] {
  const sorted = [...todo].sort((x, y) => x.occurrence - y.occurrence)
  return endsLater ? sorted.reverse() : sorted
}

export interface ChangeInput {
  id: string
  queryCenter: string | undefined
  ifMatch?: string
  idempotency?: IdempotencyKey
}

/**
 * Runs a change of series `input.id` (`run` returns the id of the series to answer: the series
 * itself, or the one a split started) in one transaction: 404 outside the caller's centers, 412
 * on a stale If-Match, 409 invalid_transition once cancelled, 409 series_conflict when any move is
 * refused (nothing written).
 */
export async function changeSeries(
  ctx: Ctx,
  deps: { store: SeriesStore; clock: () => Date },
  input: ChangeInput,
  run: (w: Work, occurrences: Occurrence[]) => Promise<string>,
): Promise<StoredResponse<Series>> {
  const companyId = ctx.auth.companyId
  const visible = visibleCenters(ctx.auth, input.queryCenter)
  if (input.idempotency) {
    const stored = await deps.store.storedResponse<Series>(companyId, input.idempotency)
    if (stored) {
      await findVisible(ctx, deps.store, stored.body.id, {
        queryCenter: input.queryCenter,
        notFound: SERIES_NOT_FOUND,
      })
      return stored
    }
  }
  let planned: Span[] = []
  const work = async (tx: SeriesTx): Promise<StoredResponse<Series>> => {
    const series = seriesSeenBy(visible, await tx.findSeries(input.id, { forUpdate: true }))
    if (input.ifMatch !== undefined && !ifMatchAllows(input.ifMatch, series.version))
      throw new VersionMismatch()
    if (series.status === 'cancelled') throw new InvalidTransition('The series is cancelled')
    const w: Work = { ctx, tx, series, now: deps.clock().getTime(), found: [], planned: [], events: [] }
    const answer = await run(w, await tx.lockOccurrences(series.id))
    planned = w.planned
    if (w.found.length) throw new UnclaimedOccurrences(w.found)
    if (w.events.length) await tx.publish(w.events)
    const row = (await tx.findSeries(answer))!
    return { body: present(row, await tx.lockOccurrences(answer), { visible, now: w.now }) }
  }
  try {
    if (input.idempotency) return await deps.store.idempotent(companyId, input.idempotency, work)
    return await deps.store.transaction(companyId, work)
  } catch (err) {
    if (!(err instanceof UnclaimedOccurrences)) throw err
    const conflicts = await explainConflicts(ctx, deps.store, err.found, planned)
    ctx.log.info({ series_id: input.id, conflicts: conflicts.length }, 'series change refused')
    throw new SeriesConflict(conflicts, { total: planned.length, changing: true })
  }
}
