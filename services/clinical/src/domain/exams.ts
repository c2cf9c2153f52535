import {
  UnknownAppointment,
  UnknownPatient,
  ValidationFailed,
  VersionMismatch,
  assertCenter,
  findVisible,
  idempotencyOf,
  ifMatchAllows,
  uuidv7,
  visibleCenters,
  visibleRow,
  type Ctx,
  type StoredResponse,
} from '@clinic/platform/core'
import { examCreated, examUpdated } from '../events/exam-events'
import type { CreateExamInput, Exam, ExamFields, ExamRow, UpdateExamInput } from '../schemas/exam'
import type { AppointmentDirectory, PatientDirectory } from './directory'
import { ExamSigned } from './errors'
import type { ExamStore, ExamTx } from './exam-store'
import { NOT_FOUND, withContents } from './read-exam'

export interface ExamDeps {
  store: ExamStore
  patients: PatientDirectory
  appointments: AppointmentDirectory
  clock: () => Date
}

/** Who acts, as the record keeps it. */
export const actorOf = (ctx: Ctx) => ({ userId: ctx.auth.userId, username: ctx.auth.username })

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

async function checkAppointment(ctx: Ctx, deps: ExamDeps, appointmentId: string, patientId: string) {
  const appointment = await deps.appointments.find(ctx, appointmentId)
  if (!appointment || appointment.patient_id.toLowerCase() !== patientId) throw new UnknownAppointment()
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

/**
 * The draft exam `id`, locked for this transaction, visible to the caller; a signed one is
 * 409 exam_signed (what every change of a draft checks first).
 */
export async function lockDraft(
  ctx: Ctx,
  tx: ExamTx,
  id: string,
  visible: string[] | null,
): Promise<ExamRow> {
  const exam = visibleRow(visible, await tx.findById(id, { forUpdate: true }), NOT_FOUND)
  if (exam.status === 'signed') throw new ExamSigned()
  return exam
}

/**
 * PATCH of a draft: only the fields sent, If-Match against the locked version. A signed exam is
 * 409 exam_signed, whatever the body. A PATCH that changes nothing keeps the version.
 */
export async function updateExam(
  ctx: Ctx,
  deps: ExamDeps,
  input: { id: string; patch: UpdateExamInput; queryCenter: string | undefined; ifMatch: string | undefined },
): Promise<Exam> {
  const visible = visibleCenters(ctx.auth, input.queryCenter)
  const patch = { ...input.patch }
  if (patch.performed_at) patch.performed_at = new Date(patch.performed_at).toISOString()
  if (patch.appointment_id) patch.appointment_id = patch.appointment_id.toLowerCase()
  const current = visibleRow(visible, await deps.store.findById(ctx.auth.companyId, input.id), NOT_FOUND)
  if (current.status === 'signed') throw new ExamSigned()
  if (patch.appointment_id && patch.appointment_id !== current.appointment_id)
    await checkAppointment(ctx, deps, patch.appointment_id, current.patient_id)

  const row = await deps.store.transaction(ctx.auth.companyId, async (tx) => {
    const exam = await lockDraft(ctx, tx, input.id, visible)
    if (input.ifMatch !== undefined && !ifMatchAllows(input.ifMatch, exam.version))
      throw new VersionMismatch()
    const changes = (Object.keys(patch) as Array<keyof UpdateExamInput>).filter(
      (k) => patch[k] !== undefined && patch[k] !== exam[k],
    )
    if (!changes.length) return exam
    const values = Object.fromEntries(changes.map((k) => [k, patch[k]]))
    const updated = await tx.update(exam.id, values)
    await tx.record(exam.id, {
      version: updated.version,
      action: 'updated',
      fields: changes,
      ...actorOf(ctx),
    })
    await tx.publish([examUpdated(ctx, updated, changes)])
    return updated
  })
  const [exam] = await withContents(ctx, deps.store, [row])
  return exam!
}
