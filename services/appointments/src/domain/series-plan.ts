import { ValidationFailed, type FieldError } from '@clinic/platform/core'
import { RRule } from 'rrule'
import { MAX_OCCURRENCES, parseRule, ruleText, type Rule } from './series-rule'
import { instantOf, wallAt, wallDate, wallText } from './series-zone'

/**
 * A series' plan (DESIGN.md section 20): the rule expanded from its first occurrence by rrule in
 * floating time (each instance a local wall time), the excluded dates taken out, each wall time
 * then turned into an instant in the series' zone (series-zone.ts). So 09:30 stays 09:30 local
 * across daylight-saving changes. At most 104 occurrences, all within 2 years of the first.
 */

export const MAX_YEARS = 2
const DAY_MS = 86_400_000
/** More instances than any rule of the subset makes in 2 years (daily: 732). */
const HARD_CAP = 800

export interface PlannedOccurrence {
  /** Its number in the plan, from 1 (excluded dates are not occurrences). */
  occurrence: number
  /** Local wall time (floating ms). */
  wall: number
  starts_at: string
  ends_at: string
}

export interface Plan {
  rule: Rule
  /** Every instance the rule makes (excluded dates too: COUNT counts them, as RFC 5545 says). */
  generated: number[]
  occurrences: PlannedOccurrence[]
  /** The rule as the series keeps it: UNTIL as the end of the last instance's local day. */
  rrule: string
}

export interface PlanInput {
  /** The first occurrence's wall time. */
  start: number
  rule: Rule
  /** Local dates YYYY-MM-DD to skip. */
  exdates: readonly string[]
  zone: string
  durationMinutes: number
}

const endOfDay = (wall: number) => Math.floor(wall / DAY_MS) * DAY_MS + DAY_MS - 1000
function addYears(wall: number, years: number): number {
  const d = new Date(wall)
  return Date.UTC(
    d.getUTCFullYear() + years,
    d.getUTCMonth(),
    d.getUTCDate(),
    d.getUTCHours(),
    d.getUTCMinutes(),
  )
}

/** The rule's instances from `start` (floating), and whether it goes on past the 2 years. */
function generate(rule: Rule, start: number, zone: string): { walls: number[]; beyond: boolean } {
  const u = rule.until
  const until = !u ? null : u.form === 'date' ? endOfDay(u.ms) : u.form === 'utc' ? wallAt(u.ms, zone) : u.ms
  const rrule = new RRule({
    ...rule.options,
    dtstart: new Date(start),
    count: rule.count ?? null,
    until: until === null ? null : new Date(until),
  })
  const limit = addYears(start, MAX_YEARS)
  let beyond = false
  const walls = rrule
    .all((d, i) => {
      if (d.getTime() > limit) beyond = true
      return !beyond && i < HARD_CAP
    })
    .map((d) => d.getTime())
  return { walls, beyond }
}

function planErrors(walls: number[], beyond: boolean, planned: number[], start: number): FieldError[] {
  if (!walls.length)
    return [{ path: '/rrule', message: 'gives no occurrence from start (is UNTIL before it?)' }]
  if (walls[0] !== start)
    return [
      {
        path: '/start',
        message: `is not an occurrence of the rule (BYDAY, BYMONTHDAY): its first would be ${wallText(walls[0]!)}`,
      },
    ]
  if (beyond)
    return [
      {
        path: '/rrule',
        message: `goes on for more than ${MAX_YEARS} years after the first occurrence: end it sooner (COUNT or UNTIL)`,
      },
    ]
  if (planned.length > MAX_OCCURRENCES)
    return [{ path: '/rrule', message: `gives ${planned.length} occurrences: at most ${MAX_OCCURRENCES}` }]
  if (!planned.length) return [{ path: '/exdates', message: 'leave no occurrence' }]
  return []
}

/** The plan of a series, or 400 validation_failed naming `/rrule`, `/start` or `/exdates`. */
export function planSeries(input: PlanInput): Plan {
  const { walls, beyond } = generate(input.rule, input.start, input.zone)
  const skip = new Set(input.exdates)
  const planned = walls.filter((w) => !skip.has(wallDate(w)))
  const errors = planErrors(walls, beyond, planned, input.start)
  if (errors.length) throw new ValidationFailed(errors)
  const length = input.durationMinutes * 60_000
  const occurrences = planned.map((wall, i) => {
    const t = instantOf(wall, input.zone)
    return {
      occurrence: i + 1,
      wall,
      starts_at: new Date(t).toISOString(),
      ends_at: new Date(t + length).toISOString(),
    }
  })
  const end =
    input.rule.count !== undefined ? { count: input.rule.count } : { untilWall: endOfDay(walls.at(-1)!) }
  return { rule: input.rule, generated: walls, occurrences, rrule: ruleText(input.rule, end) }
}

/** A stored series' plan (its rule was checked when it was made). */
export function planOf(s: {
  start: string
  rrule: string
  exdates: readonly string[]
  time_zone: string
  duration_minutes: number
}): Plan {
  const parsed = parseRule(s.rrule)
  if ('errors' in parsed) throw new Error(`stored series rule does not parse: ${parsed.errors.join('; ')}`)
  const [date, time] = s.start.split('T') as [string, string]
  const [y, m, d] = date.split('-').map(Number) as [number, number, number]
  const [hh, mm] = time.split(':').map(Number) as [number, number]
  return planSeries({
    start: Date.UTC(y, m - 1, d, hh, mm),
    rule: parsed.rule,
    exdates: s.exdates,
    zone: s.time_zone,
    durationMinutes: s.duration_minutes,
  })
}

/**
 * A split before the instance at wall time `at` (scope following): the rule of the part before
 * (ended by COUNT or UNTIL as the rule was) and of the part from `at` on.
 */
export function splitRule(plan: Plan, at: number): { before: string; after: string } {
  const earlier = plan.generated.filter((w) => w < at)
  const { rule } = plan
  if (rule.count !== undefined)
    return {
      before: ruleText(rule, { count: earlier.length }),
      after: ruleText(rule, { count: rule.count - earlier.length }),
    }
  return {
    before: ruleText(rule, { untilWall: endOfDay(earlier.at(-1)!) }),
    after: ruleText(rule, { untilWall: endOfDay(plan.generated.at(-1)!) }),
  }
}
