import type { FieldError } from '@clinic/platform/core'
import { canonicalTimeZone, parseInstant } from './rules'

/** Pure rules of the Practitioner resource (DESIGN.md section 11); unit-tested without a database. */

export const MAX_TIME_OFF_DAYS = 366
const str = (v: unknown): v is string => typeof v === 'string'
const CLOCK = /^(([01]\d|2[0-3]):[0-5]\d|24:00)$/

interface Entry {
  i: number
  weekday: number
  start: string
  end: string
}

/**
 * Checks the schema cannot express on a create or PATCH body: a known time zone; each entry of
 * working_hours ending after it starts; no two entries of one weekday overlapping (a practitioner
 * is in one place at a time, whatever the center). Defensive about types: it also runs on bodies
 * that failed their schema, so every bad field is listed at once.
 */
export function practitionerFieldErrors(body: unknown): FieldError[] {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return []
  const b = body as Record<string, unknown>
  const errors: FieldError[] = []
  if (str(b.time_zone) && b.time_zone.length <= 64 && canonicalTimeZone(b.time_zone) === null)
    errors.push({ path: '/time_zone', message: 'is not a time zone this service knows (IANA name)' })
  if (!Array.isArray(b.working_hours)) return errors
  const entries: Entry[] = []
  b.working_hours.forEach((h: unknown, i) => {
    if (h === null || typeof h !== 'object') return
    const { weekday, start, end } = h as Record<string, unknown>
    if (!str(start) || !str(end) || !CLOCK.test(start) || !CLOCK.test(end)) return
    if (start === '24:00') errors.push({ path: `/working_hours/${i}/start`, message: 'must be before 24:00' })
    else if (end <= start) errors.push({ path: `/working_hours/${i}/end`, message: 'must be after start' })
    else if (Number.isInteger(weekday)) entries.push({ i, weekday: weekday as number, start, end })
  })
  entries.sort((x, y) => x.weekday - y.weekday || x.start.localeCompare(y.start))
  for (let k = 1; k < entries.length; k++) {
    const [prev, cur] = [entries[k - 1]!, entries[k]!]
    if (prev.weekday === cur.weekday && cur.start < prev.end)
      errors.push({
        path: `/working_hours/${cur.i}/start`,
        message: `overlaps working_hours/${prev.i} (${prev.start}-${prev.end} on weekday ${prev.weekday})`,
      })
  }
  return errors
}

/** A time off body: valid instants, ends after starts, at most a year. */
export function timeOffFieldErrors(body: unknown): FieldError[] {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return []
  const b = body as Record<string, unknown>
  const errors: FieldError[] = []
  const ms: Record<string, number> = {}
  for (const field of ['starts_at', 'ends_at'] as const) {
    if (!str(b[field])) continue
    const parsed = parseInstant(b[field] as string)
    if ('error' in parsed) errors.push({ path: `/${field}`, message: parsed.error })
    else ms[field] = parsed.ms
  }
  if (ms.starts_at !== undefined && ms.ends_at !== undefined) {
    if (ms.ends_at <= ms.starts_at) errors.push({ path: '/ends_at', message: 'must be after starts_at' })
    else if (ms.ends_at - ms.starts_at > MAX_TIME_OFF_DAYS * 86_400_000)
      errors.push({ path: '/ends_at', message: `must be at most ${MAX_TIME_OFF_DAYS} days after starts_at` })
  }
  return errors
}
