import type { AppointmentFields } from '../schemas/appointment'
import type { UpdateSeriesInput } from '../schemas/series'
import type { Plan } from './series-plan'
import type { Occurrence, SeriesRow, SeriesValues } from './series-store'

/**
 * How a change of a series (PATCH, DESIGN.md section 20) re-plans it: the series' own values
 * after it, and the values each re-planned occurrence takes.
 */

/** What a PATCH of a series changes (DESIGN.md section 20). */
export type Change = Pick<UpdateSeriesInput, 'start_time' | 'duration_minutes' | 'practitioner' | 'notes'>
export const CHANGE_FIELDS = ['start_time', 'duration_minutes', 'practitioner', 'notes'] as const

/** The series' own values after a re-plan (all, following): its start keeps its date. */
export function seriesAfter(
  s: SeriesRow,
  c: Change,
): Pick<SeriesValues, 'start' | 'duration_minutes' | 'practitioner' | 'notes'> {
  return {
    start: c.start_time ? `${s.start.slice(0, 10)}T${c.start_time}` : s.start,
    duration_minutes: c.duration_minutes ?? s.duration_minutes,
    practitioner: c.practitioner ?? s.practitioner,
    notes: c.notes !== undefined ? c.notes : s.notes,
  }
}

/** The names of the change's fields whose values differ from the series'. */
export function changedFields(s: SeriesRow, next: ReturnType<typeof seriesAfter>): string[] {
  const out: string[] = []
  if (next.start !== s.start) out.push('start_time')
  if (next.duration_minutes !== s.duration_minutes) out.push('duration_minutes')
  if (next.practitioner !== s.practitioner) out.push('practitioner')
  if (next.notes !== s.notes) out.push('notes')
  return out
}

/**
 * The values a re-planned occurrence takes: its planned times in `plan` (when the change moves
 * times), the practitioner and notes when the change names them.
 */
export function replanned(a: Occurrence, plan: Plan, c: Change): Partial<AppointmentFields> {
  const values: Partial<AppointmentFields> = {}
  if (c.start_time !== undefined || c.duration_minutes !== undefined) {
    const p = plan.occurrences[a.occurrence - 1]
    if (!p) throw new Error(`re-plan: occurrence ${a.occurrence} is not in the plan`)
    Object.assign(values, { starts_at: p.starts_at, ends_at: p.ends_at, recurrence_id: p.starts_at })
  }
  if (c.practitioner !== undefined) values.practitioner = c.practitioner
  if (c.notes !== undefined) values.notes = c.notes
  return values
}

const minutesOf = (start: string) => Number(start.slice(11, 13)) * 60 + Number(start.slice(14, 16))
/** Whether a re-plan ends occurrences later in their day than they end now (then the last ones move first). */
export const endsLater = (
  s: Pick<SeriesRow, 'start' | 'duration_minutes'>,
  next: ReturnType<typeof seriesAfter>,
) => minutesOf(next.start) + next.duration_minutes > minutesOf(s.start) + s.duration_minutes
