import type { Ctx } from '@clinic/platform/core'

/**
 * The patients service, as the appointments domain sees it: does this patient exist in the
 * caller's company? Implemented in app.ts over the platform's typed client of patients
 * (`services.patients.lookUp`). When the patients service cannot answer it throws
 * UpstreamUnavailable (503, Retry-After); nothing is written then.
 */
export interface PatientDirectory {
  exists(ctx: Ctx, patientId: string): Promise<boolean>
}
