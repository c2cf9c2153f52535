import type { Ctx, PatientContact } from '@clinic/platform/core'

/** What comms needs of a patient to address a message: the event registry's PatientContact. */
export type { PatientContact }

export interface PatientDirectory {
  /** The patient of the caller's company, or null when there is none (other companies' too). */
  contact(ctx: Ctx, patientId: string): Promise<PatientContact | null>
}
