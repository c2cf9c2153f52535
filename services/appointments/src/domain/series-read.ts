import { centerVisible, visibleCenters, visibleRow, type Ctx } from '@clinic/platform/core'
import type { Appointment } from '../schemas/appointment'
import type { Series } from '../schemas/series'
import type { Occurrence, SeriesRow, SeriesStore } from './series-store'

export const SERIES_NOT_FOUND = 'No such series'

/** The series if the caller may see it (its center under `?codalmacen=` and the token's centers), else 404. */
export const seriesSeenBy = (visible: string[] | null, row: SeriesRow | null): SeriesRow =>
  visibleRow(visible, row, SERIES_NOT_FOUND)

/** An occurrence as the API shows it (an Appointment: the series' own flag stays inside). */
export function asAppointment(o: Occurrence | Appointment): Appointment {
  const { series_exception: _exception, ...appointment } = o as Occurrence
  return appointment
}

/**
 * The series as answered: its row, its occurrences the caller may see (an occurrence moved to a
 * center the token cannot see is left out), in order. An active series whose every occurrence has
 * started is `ended` (nothing is written when time passes: the answer says it).
 */
export function present(
  row: SeriesRow,
  occurrences: Array<Occurrence | Appointment>,
  o: { visible: string[] | null; now: number },
): Series {
  const shown = occurrences
    .filter((a) => centerVisible(o.visible, a.codalmacen))
    .map(asAppointment)
    .sort((a, b) => (a.occurrence ?? 0) - (b.occurrence ?? 0))
  const starts = [...occurrences.map((a) => a.starts_at), ...row.skipped.map((s) => s.starts_at)]
  const over = starts.length > 0 && starts.every((s) => Date.parse(s) <= o.now)
  return { ...row, status: row.status === 'active' && over ? 'ended' : row.status, occurrences: shown }
}

/** GET /appointments/series/{id}. */
export async function getSeries(
  ctx: Ctx,
  deps: { store: SeriesStore; clock: () => Date },
  input: { id: string; queryCenter: string | undefined },
): Promise<Series> {
  const visible = visibleCenters(ctx.auth, input.queryCenter)
  const row = seriesSeenBy(visible, await deps.store.findById(ctx.auth.companyId, input.id))
  const occurrences = await deps.store.occurrences(ctx.auth.companyId, row.id)
  return present(row, occurrences, { visible, now: deps.clock().getTime() })
}
