import { findVisible, visibleRow, type Ctx } from '@clinic/platform/core'
import type { Appointment } from '../schemas/appointment'
import type { AppointmentStore } from './appointment-store'

/**
 * The appointment if the caller may see it (its center among `visible`, from `?codalmacen=` and
 * the token's centers), else 404: another company's id, an unknown id and a hidden center look alike.
 */
export const seenBy = (visible: string[] | null, appointment: Appointment | null): Appointment =>
  visibleRow(visible, appointment, NOT_FOUND)

const NOT_FOUND = 'No such appointment'

/** An appointment of the caller's company, visible under `?codalmacen=` and the token's centers. */
export async function getAppointment(
  ctx: Ctx,
  store: AppointmentStore,
  input: { id: string; queryCenter: string | undefined },
): Promise<Appointment> {
  return findVisible(ctx, store, input.id, { queryCenter: input.queryCenter, notFound: NOT_FOUND })
}
