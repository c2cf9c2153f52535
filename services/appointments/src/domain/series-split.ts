import { ValidationFailed, uuidv7 } from '@clinic/platform/core'
import { seriesCreated, seriesUpdated } from '../events/series-events'
import { InvalidTransition } from './errors'
import { endsLater, replanned, seriesAfter, type Change } from './series-replan'
import { planOf, splitRule } from './series-plan'
import type { Occurrence, SeriesValues } from './series-store'
import { inMoveOrder, replannable, writeOccurrence, type Work } from './series-moves'
import { wallDate } from './series-zone'

/**
 * scope following (DESIGN.md section 20): the series ends before occurrence `n` (status ended, its
 * rule cut there) and a new series (previous_series_id) goes on from it with the change. The
 * appointments from `n` on move to the new series as they are (same ids, renumbered from 1, their
 * recurrence_id the new plan's start), and the change applies to those a re-plan may change. Every
 * appointment stays in exactly one series: nothing is lost or doubled (the unique index on
 * series_id and occurrence guards it). Answers the new series' id.
 */
export async function splitSeries(w: Work, occurrences: Occurrence[], n: number, c: Change): Promise<string> {
  const old = w.series
  // One continuation per series: an ended one changes by `this` or `all`.
  if (old.status === 'ended')
    throw new InvalidTransition('The series has ended: change its occurrences with scope this or all')
  const plan = planOf(old)
  const at = plan.occurrences[n - 1]
  if (!at)
    throw new ValidationFailed([
      {
        path: '/occurrence',
        message: `is not an occurrence of this series (1 to ${plan.occurrences.length})`,
      },
    ])
  const rules = splitRule(plan, at.wall)
  const from = wallDate(at.wall)
  const next = seriesAfter(old, c)
  const shift = n - 1
  const values: SeriesValues = {
    ...old,
    ...next,
    start: `${from}T${next.start.slice(11)}`,
    rrule: rules.after,
    exdates: old.exdates.filter((d) => d >= from),
    status: 'active',
    previous_series_id: old.id,
    next_series_id: null,
    skipped: old.skipped
      .filter((s) => s.occurrence >= n)
      .map((s) => ({ ...s, occurrence: s.occurrence - shift })),
  }
  const created = await w.tx.insertSeries(uuidv7(), values)
  const newPlan = planOf(created)
  if (newPlan.occurrences.length !== plan.occurrences.length - shift)
    throw new Error(
      `split: the new series plans ${newPlan.occurrences.length} occurrences, not ${plan.occurrences.length - shift}`,
    )
  const moving = occurrences.filter((a) => a.occurrence >= n)
  w.events.push(seriesCreated(w.ctx, created, moving.length))
  for (const a of inMoveOrder(moving, endsLater(old, next))) {
    const renumbered = { ...a, occurrence: a.occurrence - shift }
    await writeOccurrence(w, a, {
      series_id: created.id,
      occurrence: renumbered.occurrence,
      recurrence_id: newPlan.occurrences[renumbered.occurrence - 1]!.starts_at,
      ...(replannable(a, old, w.now) ? replanned(renumbered, newPlan, c) : {}),
    })
  }
  const ended = await w.tx.updateSeries(old.id, {
    status: 'ended',
    rrule: rules.before,
    exdates: old.exdates.filter((d) => d < from),
    skipped: old.skipped.filter((s) => s.occurrence < n),
    next_series_id: created.id,
  })
  const changes = ['status', 'rrule', 'next_series_id']
  if (ended.exdates.length !== old.exdates.length) changes.push('exdates')
  if (ended.skipped.length !== old.skipped.length) changes.push('skipped')
  w.events.push(seriesUpdated(w.ctx, ended, occurrences.length - moving.length, 'following', changes))
  return created.id
}
