import {
  UnknownPatient,
  ValidationFailed,
  assertCenter,
  findVisible,
  idempotencyOf,
  uuidv7,
  type Ctx,
  type StoredResponse,
} from '@clinic/platform/core'
import { examCreated } from '../events/exam-events'
import type { CreateExamInput, Exam, ExamFields, ExamRow } from '../schemas/exam'

import { NOT_FOUND, actorOf, checkAppointment, type ExamDeps } from './exam-rules'

/**
 * A new draft exam. The patient must exist in the caller's company (422 unknown_patient), and a
 * named appointment must be of that patient in that company (422 unknown_appointment): both are
 * asked of their services before anything is written. The center is the body's, else the query's,
 * else the patient's home center.
 */
export async function createExam(
  ctx: Ctx,
  deps: ExamDeps,
  input: {
    body: CreateExamInput
    queryCenter: string | undefined
    idempotencyKey?: string
    requestHash: string
  },
): Promise<StoredResponse<Exam>> {
  const idempotency = idempotencyOf(ctx, {
    idempotencyKey: input.idempotencyKey,
    requestHash: input.requestHash,
  })
  const stored = await deps.store.storedResponse<Exam>(ctx.auth.companyId, idempotency)
  if (stored) {
    await findVisible(ctx, deps.store, stored.body.id, { notFound: NOT_FOUND })
    return stored
  }
  const body = input.body
  const patientId = body.patient_id.toLowerCase()
  const patient = await deps.patients.find(ctx, patientId)
  if (!patient) throw new UnknownPatient()
  const center = body.codalmacen ?? input.queryCenter ?? patient.codalmacen
  if (!center)
    throw new ValidationFailed([
      {
        path: '/codalmacen',
        message: 'is required (in the body or ?codalmacen=): the patient has no home center',
      },
    ])
  assertCenter(ctx.auth, center)
  const appointmentId = body.appointment_id?.toLowerCase() ?? null
  if (appointmentId) await checkAppointment(ctx, deps, appointmentId, patientId)

  const fields: ExamFields = {
    patient_id: patientId,
    codalmacen: center,
    practitioner: body.practitioner,
    appointment_id: appointmentId,
    performed_at: (body.performed_at ? new Date(body.performed_at) : deps.clock()).toISOString(),
    kind: body.kind ?? 'comprehensive',
    chief_complaint: body.chief_complaint ?? null,
    notes: body.notes ?? null,
  }
  const result = await deps.store.idempotent(ctx.auth.companyId, idempotency, async (tx) => {
    const row = await tx.insert(uuidv7(), fields)
    await tx.record(row.id, { version: row.version, action: 'created', ...actorOf(ctx) })
    await tx.publish([examCreated(ctx, row)])
    return { body: emptyExam(row) }
  })
  ctx.log.info({ exam_id: result.body.id, replayed: !!result.replayed }, 'exam created')
  return result
}

/** A new exam has no findings nor prescriptions yet. */
const emptyExam = (row: ExamRow): Exam => ({
  ...row,
  visual_acuity: [],
  iop: [],
  refraction: [],
  diagnoses: [],
  prescriptions: [],
})
