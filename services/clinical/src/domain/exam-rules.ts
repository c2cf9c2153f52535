import { UnknownAppointment, visibleRow, type Ctx } from '@clinic/platform/core'
import type { ExamRow } from '../schemas/exam'
import { ExamSigned } from './errors'
import type { ExamStore, ExamTx } from './exam-store'

import type { AppointmentDirectory, PatientDirectory } from './directories'

export const NOT_FOUND = 'No such exam'

export interface ExamDeps {
  store: ExamStore
  patients: PatientDirectory
  appointments: AppointmentDirectory
  clock: () => Date
}

/** Who acts, as the record keeps it. */
export const actorOf = (ctx: Ctx) => ({ userId: ctx.auth.userId, username: ctx.auth.username })

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

/** A named appointment must be of that patient in the caller's company (422 unknown_appointment). */
export async function checkAppointment(ctx: Ctx, deps: ExamDeps, appointmentId: string, patientId: string) {
  const appointment = await deps.appointments.find(ctx, appointmentId)
  if (!appointment || appointment.patient_id.toLowerCase() !== patientId) throw new UnknownAppointment()
}
