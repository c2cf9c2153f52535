import { findVisible, uuidv7, type Ctx, type StoredResponse, idempotencyOf } from '@clinic/platform/core'
import { patientCreated } from '../events/patient-events'
import type { CreatePatientInput, Patient } from '../schemas/patient'
import { centerForWrite } from './center-rules'
import { GuardianRequired } from './errors'
import type { PatientStore } from './patient-store'
import { fieldsFromCreate, guardianSatisfied } from './rules'

export interface CreatePatient {
  /** Valid against CreatePatientBody and `patientFieldErrors` (the route checks both, once). */
  body: CreatePatientInput
  /** `?codalmacen=`: the center when the body names none. */
  queryCenter: string | undefined
  idempotencyKey: string | undefined
  /** Hash of method, path and body: the same key with another body is a conflict. */
  requestHash: string
}

/** The new patient, or the stored one when the Idempotency-Key was used before (`replayed`). */
export async function createPatient(
  ctx: Ctx,
  store: PatientStore,
  input: CreatePatient,
): Promise<StoredResponse<Patient>> {
  const requested = input.body.codalmacen !== undefined ? input.body.codalmacen : (input.queryCenter ?? null)
  const fields = fieldsFromCreate(input.body, centerForWrite(ctx.auth, requested))
  if (!guardianSatisfied(fields)) throw new GuardianRequired()

  // A new patient is version 1: its event is made before the row, which the store may then write
  // with it in one statement.
  const id = uuidv7()
  const result = await store.create(ctx.auth.companyId, idempotencyOf(ctx, input), {
    id,
    fields,
    events: [patientCreated(ctx, { id, ...fields, version: 1 })],
  })
  // A replay is a read: the patient must still exist and be visible to this token's centers now
  // (another user may have moved it to a center the token cannot see).
  if (result.replayed) await findVisible(ctx, store, result.body.id, { notFound: 'No such patient' })
  ctx.log.info({ patient_id: result.body.id, replayed: !!result.replayed }, 'patient created')
  return result
}
