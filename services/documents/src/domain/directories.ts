import type { Ctx, PatientContact } from '@clinic/platform/core'

export type { PatientContact }

/**
 * The patients service as documents sees it (clients/patients-client.ts): the patient of the
 * caller's company, or null (another company's looks missing). Down: UpstreamUnavailable.
 */
export interface PatientDirectory {
  contact(ctx: Ctx, patientId: string): Promise<PatientContact | null>
}

/** Whose a record of another service is: enough to check it belongs to a document's patient. */
export interface OwnedRecord {
  id: string
  patient_id: string
}

/**
 * The appointments service (clients/appointments-client.ts): the caller's appointment and its
 * patient, or null (another company's, a hidden center's or a missing one look alike).
 */
export interface AppointmentDirectory {
  find(ctx: Ctx, appointmentId: string): Promise<OwnedRecord | null>
}

/** The clinical service (clients/clinical-client.ts): the caller's exam and its patient, or null. */
export interface ExamDirectory {
  find(ctx: Ctx, examId: string): Promise<OwnedRecord | null>
}
