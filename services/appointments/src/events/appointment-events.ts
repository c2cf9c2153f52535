import { makeEvent, type CloudEvent, type Ctx, type EventData } from '@clinic/platform/core'
import type { Appointment, AppointmentStatus } from '../schemas/appointment'

export const SOURCE = 'clinic/appointments'

/** What consumers need (reminders, schedules, audit): never reason, notes or cancellation reason. */
export function slotOf(a: Appointment): EventData<'appointment.created'> {
  return {
    id: a.id,
    patient_id: a.patient_id,
    codalmacen: a.codalmacen,
    practitioner: a.practitioner,
    starts_at: a.starts_at,
    ends_at: a.ends_at,
    time_zone: a.time_zone,
    status: a.status,
    checked_in_at: a.checked_in_at,
    version: a.version,
  }
}

const envelope = (ctx: Ctx, a: Appointment) => ({
  source: SOURCE,
  subject: a.id,
  companyId: ctx.auth.companyId,
  codalmacen: a.codalmacen,
  ctx,
})

/** `outsideHours`: booked outside a registered practitioner's hours on purpose (the audit trail shows it). */
export const appointmentCreated = (
  ctx: Ctx,
  a: Appointment,
  outsideHours = false,
): CloudEvent<'appointment.created'> =>
  makeEvent({
    type: 'appointment.created',
    ...envelope(ctx, a),
    data: outsideHours ? { ...slotOf(a), outside_hours: true } : slotOf(a),
  })

/**
 * `changes` names the changed fields, never their values (so no slot here: a consumer that needs the
 * new times reads the appointment); `old_status`/`new_status` say how the status moved, when it did.
 */
export function appointmentUpdated(
  ctx: Ctx,
  a: Appointment,
  changes: string[],
  status: { from: AppointmentStatus; to: AppointmentStatus } | null,
  outsideHours = false,
): CloudEvent<'appointment.updated'> {
  return makeEvent({
    type: 'appointment.updated',
    ...envelope(ctx, a),
    data: {
      id: a.id,
      patient_id: a.patient_id,
      version: a.version,
      changes,
      old_status: status?.from ?? null,
      new_status: status?.to ?? null,
      ...(outsideHours ? { outside_hours: true } : {}),
    },
  })
}

export function appointmentCheckedIn(
  ctx: Ctx,
  a: Appointment,
  from: AppointmentStatus,
): CloudEvent<'appointment.checked_in'> {
  return makeEvent({
    type: 'appointment.checked_in',
    ...envelope(ctx, a),
    data: { ...slotOf(a), changes: ['status', 'checked_in_at'], old_status: from, new_status: a.status },
  })
}
