import { VersionMismatch, assertCenter, ifMatchAllows, visibleCenters, type Ctx } from '@clinic/platform/core'
import { appointmentUpdated } from '../events/appointment-events'
import type { Appointment, UpdateAppointmentInput } from '../schemas/appointment'
import type { AppointmentStore } from './appointment-store'
import { spanOf } from './book-appointment'
import { checkWorking, explainingConflicts } from './calendar-rules'
import { seenBy } from './get-appointment'
import { planPatch } from './rules'

export interface UpdateAppointment {
  id: string
  /** Checked against the schema and appointmentFieldErrors by the route. */
  patch: UpdateAppointmentInput
  queryCenter: string | undefined
  /** The If-Match header, when sent. */
  ifMatch: string | undefined
}

/**
 * Applies a PATCH under a row lock: If-Match is compared with the locked version, the state
 * machine and time rules with the merged result (rules.planPatch). Moving onto a taken slot is
 * refused by the database and rolls everything back. A PATCH that changes nothing keeps version
 * and updated_at and emits no event.
 */
export async function updateAppointment(
  ctx: Ctx,
  store: AppointmentStore,
  input: UpdateAppointment,
): Promise<Appointment> {
  const visible = visibleCenters(ctx.auth, input.queryCenter)
  if (input.patch.codalmacen !== undefined) assertCenter(ctx.auth, input.patch.codalmacen)

  let registered = false
  let moving: Appointment | undefined
  const work = () =>
    store.transaction(ctx.auth.companyId, async (tx) => {
      const current = seenBy(visible, await tx.findById(input.id, { forUpdate: true }))
      if (input.ifMatch !== undefined && !ifMatchAllows(input.ifMatch, current.version))
        throw new VersionMismatch()
      const plan = planPatch(current, input.patch)
      if (!plan.changes.length) return { appointment: current, changes: plan.changes }
      let outsideHours = false
      if (plan.changes.some((c) => MOVES.includes(c))) {
        moving = { ...current, ...plan.values }
        const working = await checkWorking(tx, spanOf(moving), input.patch.outside_hours)
        ;({ registered, outsideHours } = working)
      }
      const appointment = await tx.update(current, plan.values)
      await tx.publish([appointmentUpdated(ctx, appointment, plan.changes, plan.status, outsideHours)])
      return { appointment, changes: plan.changes }
    })
  const result = await explainingConflicts(ctx, store, work, () =>
    moving ? { span: spanOf(moving), patientId: moving.patient_id, self: input.id, registered } : null,
  )
  ctx.log.info({ appointment_id: input.id, changes: result.changes }, 'appointment updated')
  return result.appointment
}

/** Changes that claim other time (or place) from a practitioner: checked against their hours. */
const MOVES: readonly string[] = ['practitioner', 'codalmacen', 'starts_at', 'ends_at']
