import type { Ctx, PatientContact } from '@clinic/platform/core'

export type { PatientContact }

/**
 * The patients service as documents sees it (clients/patients-client.ts): the patient of the
 * caller's company, or null (another company's looks missing). Down: UpstreamUnavailable.
 */
export interface PatientDirectory {
  contact(ctx: Ctx, patientId: string): Promise<PatientContact | null>
}

/** The appointments service (clients/appointments-client.ts): does the appointment exist for the caller? */
export interface AppointmentDirectory {
  exists(ctx: Ctx, appointmentId: string): Promise<boolean>
}
