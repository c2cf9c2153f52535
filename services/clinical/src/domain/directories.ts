import type { Ctx } from '@clinic/platform/core'

/**
 * The patients and appointments services, as the clinical domain sees them (app.ts implements
 * them over the platform's typed clients). Each answers for the caller's company only (another
 * company's id is unknown); when a service cannot answer it throws UpstreamUnavailable (503) and
 * nothing is written.
 */
export interface PatientDirectory {
  /** The patient (its home center: null, none), or null when there is no such patient. */
  find(ctx: Ctx, patientId: string): Promise<{ codalmacen: string | null } | null>
}

export interface AppointmentDirectory {
  /** The appointment's patient, or null when there is no such appointment. */
  find(ctx: Ctx, appointmentId: string): Promise<{ patient_id: string } | null>
}
