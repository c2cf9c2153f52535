import { makeEvent, type CloudEvent, type Ctx, type EventData } from '@clinic/platform/core'
import type { SeriesScope } from '../schemas/series'
import type { SeriesRow } from '../domain/series-store'
import { SOURCE } from './appointment-events'

/**
 * appointment.series.created / .updated / .cancelled (DESIGN.md section 20), as the contracts
 * declare them: ids, status and how many occurrences the series holds; never reason or notes.
 * Each occurrence also has its own appointment.created or appointment.updated.
 */

type SeriesData = Omit<EventData<'appointment.series.created'>, 'skipped'>

const dataOf = (s: SeriesRow, occurrences: number): SeriesData => ({
  id: s.id,
  patient_id: s.patient_id,
  practitioner: s.practitioner,
  codalmacen: s.codalmacen,
  status: s.status,
  previous_series_id: s.previous_series_id,
  occurrences,
  version: s.version,
})

const envelope = (ctx: Ctx, s: SeriesRow) => ({
  source: SOURCE,
  subject: s.id,
  companyId: ctx.auth.companyId,
  codalmacen: s.codalmacen,
  ctx,
})

/** A series booked, or the new series a split (scope following) starts. */
export const seriesCreated = (
  ctx: Ctx,
  s: SeriesRow,
  occurrences: number,
): CloudEvent<'appointment.series.created'> =>
  makeEvent({
    type: 'appointment.series.created',
    ...envelope(ctx, s),
    data: { ...dataOf(s, occurrences), skipped: s.skipped.length },
  })

/** `changes`: the names of what changed (start_time, duration_minutes, practitioner, notes, status...). */
export const seriesUpdated = (
  ctx: Ctx,
  s: SeriesRow,
  occurrences: number,
  scope: SeriesScope,
  changes: string[],
): CloudEvent<'appointment.series.updated'> =>
  makeEvent({
    type: 'appointment.series.updated',
    ...envelope(ctx, s),
    data: { ...dataOf(s, occurrences), scope, changes },
  })

/** `cancelled`: how many appointments this cancellation cancelled. */
export const seriesCancelled = (
  ctx: Ctx,
  s: SeriesRow,
  occurrences: number,
  scope: SeriesScope,
  cancelled: number,
): CloudEvent<'appointment.series.cancelled'> =>
  makeEvent({
    type: 'appointment.series.cancelled',
    ...envelope(ctx, s),
    data: { ...dataOf(s, occurrences), scope, cancelled },
  })
