import { UnknownAppointment, UnknownExam, type Ctx } from '@clinic/platform/core'
import type { AppointmentDirectory, ExamDirectory } from './directories'

export interface ReferenceDirectories {
  appointments: AppointmentDirectory
  exams: ExamDirectory
}

/**
 * A document's or a consent's `appointment_id` and `exam_id` (DESIGN.md sections 15 and 16): each
 * must be a record of this patient in the caller's company, as its own service answers for the
 * caller (a hidden center's is unknown too): else 422 unknown_appointment / unknown_exam. Both
 * services are asked at once.
 */
export async function checkReferences(
  ctx: Ctx,
  deps: ReferenceDirectories,
  patientId: string,
  refs: { appointmentId?: string | null; examId?: string | null },
): Promise<void> {
  const [appointment, exam] = await Promise.all([
    refs.appointmentId ? deps.appointments.find(ctx, refs.appointmentId) : null,
    refs.examId ? deps.exams.find(ctx, refs.examId) : null,
  ])
  if (refs.appointmentId && appointment?.patient_id.toLowerCase() !== patientId)
    throw new UnknownAppointment()
  if (refs.examId && exam?.patient_id.toLowerCase() !== patientId) throw new UnknownExam()
}
