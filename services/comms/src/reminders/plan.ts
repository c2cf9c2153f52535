import type { ReminderPolicy } from '../schemas/reminder'
import { dueAt, outOfQuietHours, parseOffset } from './schedule'

/** What reminders need of an appointment (its `appointment.created` data, or the internal lookup). */
export interface AppointmentSlot {
  id: string
  patient_id: string
  codalmacen: string | null
  starts_at: string
  time_zone: string
  status: string
  version: number
  /** scheduled or confirmed: the statuses that get reminders. */
  active: boolean
}

export const REMINDED_STATUSES = ['scheduled', 'confirmed']

export interface PlannedReminder {
  offset: string
  dueAt: Date
  /** Why it will not be sent, or null. */
  skipped: string | null
}

/**
 * The reminders an appointment should have under `policy`, planned at `scheduledAt` (when it was
 * booked or moved): none unless the policy is on and the appointment scheduled or confirmed. One
 * whose time (out of quiet hours) was already past then is `skipped`.
 */
export function planReminders(
  slot: AppointmentSlot,
  policy: ReminderPolicy,
  scheduledAt: Date,
): PlannedReminder[] {
  if (!policy.enabled || !slot.active) return []
  const start = new Date(slot.starts_at)
  return policy.offsets.flatMap((offset) => {
    const o = parseOffset(offset)
    if (!o) return []
    const due = dueAt(start, o, slot.time_zone)
    const moved = outOfQuietHours(due, policy.quiet_hours, slot.time_zone)
    let skipped: string | null = null
    if (moved < scheduledAt)
      skipped =
        moved < due
          ? 'due in quiet hours, and the last minute before them had passed when it was scheduled'
          : 'due before the appointment was booked or moved'
    return [{ offset, dueAt: moved, skipped }]
  })
}
