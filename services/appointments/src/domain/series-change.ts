import { ValidationFailed, type Ctx, type FieldError } from '@clinic/platform/core'
import { seriesUpdated } from '../events/series-events'
import type { AppointmentFields } from '../schemas/appointment'
import type { Series, UpdateSeriesInput } from '../schemas/series'
import { planOf } from './series-plan'
import { CHANGE_FIELDS, changedFields, endsLater, replanned, seriesAfter, type Change } from './series-replan'
import type { Occurrence, SeriesStore } from './series-store'
import {
  assertChangeable,
  changeSeries,
  inMoveOrder,
  occurrenceOf,
  replannable,
  writeOccurrence,
  type Work,
} from './series-moves'
import { splitSeries } from './series-split'
import { instantOf, wallAt, wallDate, wallOn } from './series-zone'

/** What the schema cannot check of a PATCH or cancel body: `occurrence` with the scopes that need it. */
export function scopeErrors(body: unknown, o: { change: boolean }): FieldError[] {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return []
  const b = body as Record<string, unknown>
  const errors: FieldError[] = []
  if ((b.scope === 'this' || b.scope === 'following') && b.occurrence === undefined)
    errors.push({ path: '/occurrence', message: `is required with scope ${b.scope}` })
  if (b.scope === 'all' && b.occurrence !== undefined)
    errors.push({ path: '/occurrence', message: 'is only for scope this or following' })
  if (o.change && !CHANGE_FIELDS.some((f) => b[f] !== undefined))
    errors.push({ path: '', message: `must change something: ${CHANGE_FIELDS.join(', ')}` })
  return errors
}

/** scope this: one occurrence changes, and then stays as changed (a later `all` leaves it). */
async function changeThis(w: Work, occurrences: Occurrence[], n: number, c: Change): Promise<string> {
  const a = occurrenceOf(w.series, occurrences, n)
  assertChangeable(a)
  const zone = w.series.time_zone
  const values: Partial<AppointmentFields> = {}
  if (c.start_time !== undefined || c.duration_minutes !== undefined) {
    const start = c.start_time
      ? instantOf(wallOn(wallDate(wallAt(Date.parse(a.starts_at), zone)), c.start_time), zone)
      : Date.parse(a.starts_at)
    const length = c.duration_minutes
      ? c.duration_minutes * 60_000
      : Date.parse(a.ends_at) - Date.parse(a.starts_at)
    values.starts_at = new Date(start).toISOString()
    values.ends_at = new Date(start + length).toISOString()
  }
  if (c.practitioner !== undefined) values.practitioner = c.practitioner
  if (c.notes !== undefined) values.notes = c.notes
  if (!(await writeOccurrence(w, a, values))) return w.series.id
  await w.tx.setException([a.id], true)
  const series = await w.tx.updateSeries(w.series.id, {})
  const changes = CHANGE_FIELDS.filter((f) => c[f] !== undefined)
  w.events.push(seriesUpdated(w.ctx, series, occurrences.length, 'this', changes))
  return series.id
}

/** scope all: every occurrence yet to start that follows the plan moves to the new plan; the series too. */
async function changeAll(w: Work, occurrences: Occurrence[], c: Change): Promise<string> {
  const next = seriesAfter(w.series, c)
  const plan = planOf({ ...w.series, ...next })
  const todo = occurrences.filter((a) => replannable(a, w.series, w.now))
  let written = 0
  for (const a of inMoveOrder(todo, endsLater(w.series, next)))
    if (await writeOccurrence(w, a, replanned(a, plan, c))) written++
  const changes = changedFields(w.series, next)
  if (!changes.length && !written) return w.series.id
  const series = await w.tx.updateSeries(w.series.id, next)
  w.events.push(seriesUpdated(w.ctx, series, occurrences.length, 'all', changes))
  return series.id
}

export interface UpdateSeries {
  id: string
  body: UpdateSeriesInput
  queryCenter: string | undefined
  ifMatch: string | undefined
}

/**
 * PATCH /appointments/series/{id}: scope this (one occurrence), following (a split: the series
 * ends before the occurrence and a new one goes on with the change; answers the new one) or all
 * (every future occurrence that follows the plan). Only scheduled or confirmed occurrences change.
 */
export async function updateSeries(
  ctx: Ctx,
  deps: { store: SeriesStore; clock: () => Date },
  input: UpdateSeries,
): Promise<Series> {
  const { body } = input
  const change: Change = {
    start_time: body.start_time,
    duration_minutes: body.duration_minutes,
    practitioner: body.practitioner,
    notes: body.notes,
  }
  const result = await changeSeries(ctx, deps, input, (w, occurrences) => {
    if (body.scope === 'all') return changeAll(w, occurrences, change)
    const n = body.occurrence
    if (n === undefined) throw new ValidationFailed([{ path: '/occurrence', message: 'is required' }])
    if (body.scope === 'this') return changeThis(w, occurrences, n, change)
    // Nothing comes before the first occurrence: following from it is all.
    if (n === 1) return changeAll(w, occurrences, change)
    return splitSeries(w, occurrences, n, change)
  })
  ctx.log.info({ series_id: input.id, answer_id: result.body.id, scope: body.scope }, 'series updated')
  return result.body
}
