import { visibleCenters, type Ctx, type StoredResponse, idempotencyOf } from '@clinic/platform/core'
import { appointmentCheckedIn } from '../events/appointment-events'
import type { Appointment } from '../schemas/appointment'
import type { AppointmentStore } from './appointment-store'
import { seenBy } from './get-appointment'
import { InvalidTransition } from './errors'
import { transitionRefusal } from './status'

/**
 * The patient is at the front desk: from scheduled or confirmed to checked_in, with
 * `checked_in_at` from the database's clock, under a row lock (of two simultaneous check-ins one
 * wins, the other is 409). Any other status is 409 invalid_transition. With an Idempotency-Key a
 * retry replays the first answer instead of meeting its own check-in, if the caller may still see
 * the appointment (else 404, as for a read).
 */
export async function checkInAppointment(
  ctx: Ctx,
  store: AppointmentStore,
  input: {
    id: string
    queryCenter: string | undefined
    idempotencyKey: string | undefined
    requestHash: string
  },
): Promise<StoredResponse<Appointment>> {
  const visible = visibleCenters(ctx.auth, input.queryCenter)
  const idempotency = idempotencyOf(ctx, input)
  const result = await store.idempotent(ctx.auth.companyId, idempotency, async (tx) => {
    const current = seenBy(visible, await tx.findById(input.id, { forUpdate: true }))
    const refusal = transitionRefusal(current.status, 'checked_in', 'checkin')
    if (refusal) throw new InvalidTransition(refusal)
    const updated = await tx.checkIn(input.id)
    await tx.publish([appointmentCheckedIn(ctx, updated, current.status)])
    return { body: updated }
  })
  // A replay is a read: the appointment must still be visible to this token's centers now.
  if (result.replayed) seenBy(visible, await store.findById(ctx.auth.companyId, input.id))
  ctx.log.info({ appointment_id: input.id, replayed: !!result.replayed }, 'appointment checked in')
  return result
}
