import { ValidationFailed, uuidv7, type Ctx, GuardianRequired, type StoredResponse } from '@clinic/platform'
import { patientCreated } from '../events/patient-events'
import type { CreatePatientInput, Patient } from '../schemas/patient'
import { centerForWrite } from './center-rules'
import type { PatientStore } from './patient-store'
import { fieldsFromCreate, guardianSatisfied, patientFieldErrors } from './rules'

export interface CreatePatient {
  body: CreatePatientInput
  /** `?codalmacen=`: the center when the body names none. */
  queryCenter: string | undefined
  idempotencyKey: string | undefined
  /** Hash of method, path and body: the same key with another body is a conflict. */
  requestHash: string
}

export async function createPatient(
  ctx: Ctx,
  store: PatientStore,
  input: CreatePatient,
): Promise<StoredResponse<Patient>> {
  const errors = patientFieldErrors(input.body)
  if (errors.length) throw new ValidationFailed(errors)
  const requested = input.body.codalmacen !== undefined ? input.body.codalmacen : (input.queryCenter ?? null)
  const fields = fieldsFromCreate(input.body, centerForWrite(ctx.auth, requested))
  if (!guardianSatisfied(fields)) throw new GuardianRequired()

  const result = await store.idempotent(
    ctx.auth.companyId,
    { key: input.idempotencyKey, hash: input.requestHash },
    async (tx) => {
      const patient = await tx.insert(uuidv7(), fields)
      await tx.publish([patientCreated(ctx, patient)])
      return { status: 201, body: patient, location: `/patients/${patient.id}` }
    },
  )
  ctx.log.info({ patient_id: result.body.id, replayed: !!result.replayed }, 'patient created')
  return result
}
