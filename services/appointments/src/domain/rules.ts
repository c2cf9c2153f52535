import { ValidationFailed, type FieldError } from '@clinic/platform/core'
import {
  DEFAULT_TIME_ZONE,
  type Appointment,
  type AppointmentFields,
  type AppointmentStatus,
  type CreateAppointmentInput,
  type UpdateAppointmentInput,
} from '../schemas/appointment'
import { InvalidTransition } from './errors'
import { RESCHEDULABLE_STATUSES, isFinal, transitionRefusal } from './status'

/** Pure rules of the Appointment resource (DESIGN.md section 4); unit-tested without a database. */

/** Instants outside this window are typing mistakes (or attacks on range arithmetic), not bookings. */
export const EARLIEST_INSTANT = '1900-01-01T00:00:00.000Z'
export const LATEST_INSTANT = '2200-01-01T00:00:00.000Z'
export const MAX_DURATION_HOURS = 12
const MAX_DURATION_MS = MAX_DURATION_HOURS * 3_600_000
const earliestMs = Date.parse(EARLIEST_INSTANT)
const latestMs = Date.parse(LATEST_INSTANT)

/**
 * An RFC 3339 instant (any offset) as UTC milliseconds, or an error message. The schema has
 * checked the shape already; this catches what it cannot (23:59:60, out-of-window years).
 */
const RFC3339 = /^\d{4}-\d\d-\d\d[Tt ]\d\d:\d\d:\d\d(\.\d{1,9})?([Zz]|[+-]\d\d:\d\d)$/
export function parseInstant(value: string): { ms: number } | { error: string } {
  const ms = RFC3339.test(value) ? Date.parse(value) : NaN
  if (Number.isNaN(ms)) return { error: 'must be a valid RFC 3339 date-time' }
  if (ms < earliestMs || ms >= latestMs)
    return { error: `must be between ${EARLIEST_INSTANT.slice(0, 4)} and ${LATEST_INSTANT.slice(0, 4)}` }
  return { ms }
}

/** RFC 3339 in UTC, as stored and answered. */
export const toUtc = (value: string): string => new Date(Date.parse(value)).toISOString()

/**
 * The IANA name as the runtime spells it ("europe/madrid" -> "Europe/Madrid"), or null when the
 * runtime's time zone database does not know it. Offsets such as "+01:00" are not zones: the
 * schema's pattern refuses them first.
 */
export function canonicalTimeZone(name: string): string | null {
  try {
    return new Intl.DateTimeFormat('en', { timeZone: name }).resolvedOptions().timeZone
  } catch {
    return null
  }
}

/** ends_at after starts_at and at most 12 h later; `blame` is the field the message names. */
export function durationError(startsAt: string, endsAt: string, blame: string): FieldError | null {
  const length = Date.parse(endsAt) - Date.parse(startsAt)
  if (length <= 0)
    return {
      path: blame,
      message: blame === '/starts_at' ? 'must be before ends_at' : 'must be after starts_at',
    }
  if (length > MAX_DURATION_MS)
    return { path: blame, message: `must be at most ${MAX_DURATION_HOURS} h after starts_at` }
  return null
}

const str = (v: unknown): v is string => typeof v === 'string'

/**
 * Checks the schema cannot express, on a create or PATCH body. Defensive about types: the route
 * also calls it on bodies that failed their schema, so every bad field is listed at once.
 */
export function appointmentFieldErrors(body: unknown): FieldError[] {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return []
  const b = body as Record<string, unknown>
  const errors: FieldError[] = []
  const instants: Record<string, boolean> = {}
  for (const field of ['starts_at', 'ends_at'] as const) {
    const v = b[field]
    if (!str(v)) continue
    const parsed = parseInstant(v)
    if ('error' in parsed) errors.push({ path: `/${field}`, message: parsed.error })
    else instants[field] = true
  }
  if (instants.starts_at && instants.ends_at) {
    const e = durationError(b.starts_at as string, b.ends_at as string, '/ends_at')
    if (e) errors.push(e)
  }
  if (str(b.time_zone) && b.time_zone.length <= 64 && canonicalTimeZone(b.time_zone) === null)
    errors.push({ path: '/time_zone', message: 'is not a time zone this service knows (IANA name)' })
  return errors
}

/**
 * A new appointment's fields: who, where and when (`slot`), what `more` gives, and everything else
 * as a booking starts (scheduled, no reason or notes, in no series, from no waitlist entry).
 */
export const newAppointmentFields = (
  slot: Pick<
    AppointmentFields,
    'patient_id' | 'codalmacen' | 'practitioner' | 'starts_at' | 'ends_at' | 'time_zone'
  >,
  more: Partial<AppointmentFields> = {},
): AppointmentFields => ({
  ...slot,
  reason: null,
  notes: null,
  status: 'scheduled',
  cancellation_reason: null,
  checked_in_at: null,
  series_id: null,
  occurrence: null,
  recurrence_id: null,
  waitlist_entry_id: null,
  ...more,
})

/** A create body with defaults applied; the center is decided by the caller (body, else query). */
export function fieldsFromCreate(body: CreateAppointmentInput, codalmacen: string): AppointmentFields {
  return newAppointmentFields(
    {
      patient_id: body.patient_id.toLowerCase(),
      codalmacen,
      practitioner: body.practitioner,
      starts_at: toUtc(body.starts_at),
      ends_at: toUtc(body.ends_at),
      time_zone: canonicalTimeZone(body.time_zone ?? DEFAULT_TIME_ZONE) ?? DEFAULT_TIME_ZONE,
    },
    { reason: body.reason ?? null, notes: body.notes ?? null },
  )
}

/** The fields a PATCH may change, in the order events list them. */
export const PATCHABLE = [
  'codalmacen',
  'practitioner',
  'starts_at',
  'ends_at',
  'time_zone',
  'reason',
  'notes',
  'status',
  'cancellation_reason',
] as const satisfies ReadonlyArray<keyof AppointmentFields>
type Patchable = (typeof PATCHABLE)[number]

/** What moves the appointment in time or place: only while scheduled or confirmed. */
const SCHEDULE_FIELDS: readonly Patchable[] = [
  'codalmacen',
  'practitioner',
  'starts_at',
  'ends_at',
  'time_zone',
]

export interface PatchPlan {
  /** Names of the fields whose values change (nothing else is written). */
  changes: Patchable[]
  /** The values to write: exactly `changes`. */
  values: Partial<AppointmentFields>
  /** The status before and after, when it changes. */
  status: { from: AppointmentStatus; to: AppointmentStatus } | null
}

/**
 * Decides what a PATCH does to the current appointment, or why it is refused: 400 for a body that
 * is wrong whatever the status (a cancel without its reason, times out of order), 409
 * invalid_transition for what the status does not allow. Values equal to the stored ones are no
 * change, so repeating a PATCH is harmless.
 */
export function planPatch(current: Appointment, patch: UpdateAppointmentInput): PatchPlan {
  const next: Record<string, unknown> = {}
  for (const key of PATCHABLE) {
    const value = patch[key]
    if (value === undefined) continue
    if (key === 'starts_at' || key === 'ends_at') next[key] = toUtc(value as string)
    else if (key === 'time_zone') next[key] = canonicalTimeZone(value as string) ?? value
    else next[key] = value
  }
  const changes = PATCHABLE.filter((k) => k in next && next[k] !== current[k])
  const to = (next.status as AppointmentStatus | undefined) ?? current.status

  const errors: FieldError[] = []
  // The state machine first: only a cancel it allows needs its reason (cancelling a checked_in,
  // completed or no_show appointment is 409 below, with or without one).
  const cancelling =
    to === 'cancelled' &&
    current.status !== 'cancelled' &&
    transitionRefusal(current.status, 'cancelled', 'patch') === null
  if (cancelling && !patch.cancellation_reason)
    errors.push({ path: '/cancellation_reason', message: 'is required to cancel' })
  if (patch.cancellation_reason !== undefined && to !== 'cancelled')
    errors.push({ path: '/cancellation_reason', message: 'may only be sent with status cancelled' })
  const startsAt = (next.starts_at as string | undefined) ?? current.starts_at
  const endsAt = (next.ends_at as string | undefined) ?? current.ends_at
  if (changes.includes('starts_at') || changes.includes('ends_at')) {
    const e = durationError(startsAt, endsAt, patch.ends_at !== undefined ? '/ends_at' : '/starts_at')
    if (e) errors.push(e)
  }
  if (errors.length) throw new ValidationFailed(errors)

  if (isFinal(current.status) && changes.some((c) => c !== 'notes'))
    throw new InvalidTransition(`A ${current.status} appointment is final: only its notes may change`)
  if (changes.includes('status')) {
    const refusal = transitionRefusal(current.status, to, 'patch')
    if (refusal) throw new InvalidTransition(refusal)
  }
  const moved = changes.filter((c) => SCHEDULE_FIELDS.includes(c))
  if (moved.length && !RESCHEDULABLE_STATUSES.includes(current.status))
    throw new InvalidTransition(
      `The ${moved.join(', ')} of a ${current.status} appointment can no longer change (only while scheduled or confirmed)`,
    )
  const values: Partial<AppointmentFields> = {}
  for (const c of changes) (values as Record<string, unknown>)[c] = next[c]
  return { changes, values, status: changes.includes('status') ? { from: current.status, to } : null }
}
