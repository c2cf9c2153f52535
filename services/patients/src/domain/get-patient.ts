import { NotFound, findVisible, type Ctx } from '@clinic/platform/core'
import { contactOf } from '../events/patient-events'
import type { PatientContact } from '@clinic/platform/core'
import type { Patient } from '../schemas/patient'
import type { PatientStore } from './patient-store'

/** A patient of the caller's company, visible under `?codalmacen=` and the token's centers. */
export async function getPatient(
  ctx: Ctx,
  store: PatientStore,
  input: { id: string; queryCenter: string | undefined },
): Promise<Patient> {
  return findVisible(ctx, store, input.id, { queryCenter: input.queryCenter, notFound: 'No such patient' })
}

/**
 * For other services (appointments checks patient_id, comms resolves the recipient). Scoped by
 * company only: an appointment may be booked at any center, whatever the patient's home center.
 */
export async function getPatientContact(
  ctx: Ctx,
  store: PatientStore,
  input: { id: string },
): Promise<PatientContact> {
  const patient = await store.findById(ctx.auth.companyId, input.id)
  if (!patient) throw new NotFound('No such patient')
  return contactOf(patient)
}
