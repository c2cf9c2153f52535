import type { Ctx, PatientAction } from '@clinic/platform/core'
import type { Appointment, UpdateAppointmentInput } from '../schemas/appointment'
import type { AppointmentStore } from './appointment-store'
import { updateAppointment } from './update-appointment'

/** The cancellation reason of a patient's own cancel. */
export const PATIENT_CANCELLATION_REASON = 'cancelled by patient'

const PATCHES: Record<PatientAction, UpdateAppointmentInput> = {
  confirm: { status: 'confirmed' },
  cancel: { status: 'cancelled', cancellation_reason: PATIENT_CANCELLATION_REASON },
}

/**
 * A patient's answer, as a PATCH of the status through updateAppointment (row lock, state machine,
 * the same `appointment.updated` with the caller as actor): confirm is `scheduled -> confirmed`,
 * cancel is `cancelled` with the patient's reason. Repeating an answer already given (confirmed,
 * or cancelled by the patient) changes nothing and emits nothing; any other status is 409
 * invalid_transition.
 */
export function respondToAppointment(
  ctx: Ctx,
  store: AppointmentStore,
  input: { id: string; action: PatientAction },
): Promise<Appointment> {
  return updateAppointment(ctx, store, {
    id: input.id,
    patch: PATCHES[input.action],
    queryCenter: undefined,
    ifMatch: undefined,
  })
}
