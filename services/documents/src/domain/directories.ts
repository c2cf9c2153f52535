import type { Ctx, PatientContact } from '@clinic/platform/core'

export type { PatientContact }

/**
 * The other services as the documents domain sees them (app.ts implements each over the platform's
 * typed client): a record of the caller's company, or null (another company's, a hidden center's
 * or a missing one look alike). A service that cannot answer throws UpstreamUnavailable (503) and
 * nothing is written.
 */
export interface PatientDirectory {
  find(ctx: Ctx, patientId: string): Promise<PatientContact | null>
}

/** Whose a record of another service is: enough to check it belongs to a document's patient. */
export interface OwnedRecord {
  id: string
  patient_id: string
}

/** The caller's appointment and its patient, or null. */
export interface AppointmentDirectory {
  find(ctx: Ctx, appointmentId: string): Promise<OwnedRecord | null>
}

/** The caller's exam and its patient, or null. */
export interface ExamDirectory {
  find(ctx: Ctx, examId: string): Promise<OwnedRecord | null>
}
