import { STATUSES, type AppointmentStatus } from '../schemas/appointment'

/**
 * The appointment state machine as data (DESIGN.md section 4). Every allowed change of status is
 * one row here, with the only way to make it: a PATCH of `status`, or the check-in endpoint.
 * Whatever is not in the table is refused with 409 invalid_transition.
 */
export type TransitionVia = 'patch' | 'checkin'
export interface Transition {
  from: AppointmentStatus
  to: AppointmentStatus
  via: TransitionVia
}

export const TRANSITIONS: readonly Transition[] = [
  { from: 'scheduled', to: 'confirmed', via: 'patch' },
  { from: 'scheduled', to: 'checked_in', via: 'checkin' },
  { from: 'scheduled', to: 'cancelled', via: 'patch' },
  { from: 'scheduled', to: 'no_show', via: 'patch' },
  { from: 'confirmed', to: 'checked_in', via: 'checkin' },
  { from: 'confirmed', to: 'cancelled', via: 'patch' },
  { from: 'confirmed', to: 'no_show', via: 'patch' },
  { from: 'checked_in', to: 'completed', via: 'patch' },
]

/** Statuses nothing leaves: only `notes` may still change. */
export const FINAL_STATUSES: readonly AppointmentStatus[] = STATUSES.filter(
  (s) => !TRANSITIONS.some((t) => t.from === s),
)

/** Statuses in which the time, the practitioner and the center may still change. */
export const RESCHEDULABLE_STATUSES: readonly AppointmentStatus[] = ['scheduled', 'confirmed']

/** Statuses that hold their slot: the others free it for another booking. */
export const ACTIVE_STATUSES: readonly AppointmentStatus[] = STATUSES.filter(
  (s) => s !== 'cancelled' && s !== 'no_show',
)

export const isFinal = (s: AppointmentStatus) => FINAL_STATUSES.includes(s)

/**
 * Why `from -> to` by `via` is refused, or null when the table allows it. The message names the
 * statuses only, never appointment data.
 */
export function transitionRefusal(
  from: AppointmentStatus,
  to: AppointmentStatus,
  via: TransitionVia,
): string | null {
  const row = TRANSITIONS.find((t) => t.from === from && t.to === to)
  if (row && row.via === via) return null
  if (row && row.via === 'checkin') return 'Check in through POST /appointments/{id}/checkin'
  if (isFinal(from)) return `A ${from} appointment is final: only its notes may change`
  if (via === 'checkin') return `Only a scheduled or confirmed appointment can check in, not a ${from} one`
  return `A ${from} appointment cannot become ${to}`
}
