import { ValidationFailed, idempotencyOf, type Ctx, type StoredResponse } from '@clinic/platform/core'
import { seriesCancelled } from '../events/series-events'
import type { CancelSeriesInput, Series, SeriesStatus } from '../schemas/series'
import { planOf } from './series-plan'
import type { Occurrence, SeriesStore } from './series-store'
import {
  assertChangeable,
  cancellable,
  changeSeries,
  occurrenceOf,
  writeOccurrence,
  type Work,
} from './series-moves'

export interface CancelSeries {
  id: string
  body: CancelSeriesInput
  queryCenter: string | undefined
  idempotencyKey: string | undefined
  requestHash: string
}

/** The occurrences a cancellation cancels, and the series' status after it. */
function targetsOf(
  w: Work,
  occurrences: Occurrence[],
  body: CancelSeriesInput,
): { targets: Occurrence[]; status: SeriesStatus } {
  const n = body.occurrence
  if (body.scope === 'all')
    return { targets: occurrences.filter((a) => cancellable(a, w.now)), status: 'cancelled' }
  if (n === undefined) throw new ValidationFailed([{ path: '/occurrence', message: 'is required' }])
  if (body.scope === 'this') {
    const a = occurrenceOf(w.series, occurrences, n)
    assertChangeable(a)
    return { targets: [a], status: w.series.status }
  }
  const planned = planOf(w.series).occurrences.length
  if (n > planned)
    throw new ValidationFailed([
      { path: '/occurrence', message: `is not an occurrence of this series (1 to ${planned})` },
    ])
  // Cancelled from its first occurrence on, the whole series is; from a later one, it ends there.
  return {
    targets: occurrences.filter((a) => a.occurrence >= n && cancellable(a, w.now)),
    status: n === 1 ? 'cancelled' : 'ended',
  }
}

/**
 * POST /appointments/series/{id}/cancel (DESIGN.md section 20): scope this cancels one scheduled or
 * confirmed occurrence; following, every one yet to start from `occurrence` on (the series ends
 * there); all, every one yet to start (the series is cancelled). Each cancelled appointment gets
 * `reason` as its cancellation_reason and its own appointment.updated; the series
 * appointment.series.cancelled. Occurrences that started, checked in or ended stay as they are.
 * Idempotency-Key as every POST.
 */
export async function cancelSeries(
  ctx: Ctx,
  deps: { store: SeriesStore; clock: () => Date },
  input: CancelSeries,
): Promise<StoredResponse<Series>> {
  const { body } = input
  const result = await changeSeries(
    ctx,
    deps,
    { id: input.id, queryCenter: input.queryCenter, idempotency: idempotencyOf(ctx, input) },
    async (w, occurrences) => {
      const { targets, status } = targetsOf(w, occurrences, body)
      let cancelled = 0
      for (const a of targets)
        if (await writeOccurrence(w, a, { status: 'cancelled', cancellation_reason: body.reason }))
          cancelled++
      const series = await w.tx.updateSeries(w.series.id, status === w.series.status ? {} : { status })
      w.events.push(seriesCancelled(w.ctx, series, occurrences.length, body.scope, cancelled))
      return series.id
    },
  )
  ctx.log.info({ series_id: input.id, scope: body.scope, replayed: !!result.replayed }, 'series cancelled')
  return result
}
