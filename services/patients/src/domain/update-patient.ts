import { VersionMismatch, ifMatchAllows, visibleCenters, visibleRow, type Ctx } from '@clinic/platform/core'
import { patientUpdated } from '../events/patient-events'
import type { Patient, PatientFields, UpdatePatientInput } from '../schemas/patient'
import { centerForWrite } from './center-rules'
import type { PatientStore } from './patient-store'
import { GuardianRequired } from './errors'
import { FIELD_NAMES, applyPatch, changedFields, guardianSatisfied, pickFields } from './rules'

export interface UpdatePatient {
  id: string
  /** Valid against UpdatePatientBody and `patientFieldErrors` (the route checks both, once). */
  patch: UpdatePatientInput
  queryCenter: string | undefined
  /** The If-Match header, when sent. */
  ifMatch: string | undefined
}

/**
 * Applies a PATCH under a row lock: If-Match is compared with the locked version, the guardian
 * rule with the merged result. A PATCH that changes nothing keeps version and updated_at and emits
 * no event.
 */
export async function updatePatient(ctx: Ctx, store: PatientStore, input: UpdatePatient): Promise<Patient> {
  const visible = visibleCenters(ctx.auth, input.queryCenter)
  if (input.patch.codalmacen !== undefined) centerForWrite(ctx.auth, input.patch.codalmacen)

  const result = await store.transaction(ctx.auth.companyId, async (tx) => {
    const current = visibleRow(visible, await tx.findById(input.id, { forUpdate: true }), 'No such patient')
    if (input.ifMatch !== undefined && !ifMatchAllows(input.ifMatch, current.version))
      throw new VersionMismatch()
    const before = pickFields(current, FIELD_NAMES) as PatientFields
    const after = applyPatch(before, input.patch)
    if (!guardianSatisfied(after)) throw new GuardianRequired()
    const changes = changedFields(before, after)
    if (!changes.length) return { patient: current, changes }
    const patient = await tx.update(input.id, pickFields(after, changes))
    await tx.publish([patientUpdated(ctx, patient, changes)])
    return { patient, changes }
  })
  ctx.log.info({ patient_id: input.id, changes: result.changes }, 'patient updated')
  return result.patient
}
