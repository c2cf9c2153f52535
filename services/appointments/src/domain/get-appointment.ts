import { NotFound, centerVisible, visibleCenters, type Ctx } from '@clinic/platform/core'
import type { Appointment } from '../schemas/appointment'
import type { AppointmentStore } from './appointment-store'

/**
 * The appointment if the caller may see it (its center among `visible`, from `?codalmacen=` and
 * the token's centers), else 404: another company's id, an unknown id and a hidden center look alike.
 */
export function seenBy(visible: string[] | null, appointment: Appointment | null): Appointment {
  if (appointment && centerVisible(visible, appointment.codalmacen)) return appointment
  throw new NotFound('No such appointment')
}

/** An appointment of the caller's company, visible under `?codalmacen=` and the token's centers. */
export async function getAppointment(
  ctx: Ctx,
  store: AppointmentStore,
  input: { id: string; queryCenter: string | undefined },
): Promise<Appointment> {
  const visible = visibleCenters(ctx.auth, input.queryCenter)
  return seenBy(visible, await store.findById(ctx.auth.companyId, input.id))
}
