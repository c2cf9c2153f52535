import type { Ctx } from '@clinic/platform/core'

/**
 * The patients service, as the appointments domain sees it (app.ts implements it over the
 * platform's typed client, `services.patients.lookUp`): the patient of the caller's company, or
 * null. When the patients service cannot answer it throws UpstreamUnavailable (503, Retry-After);
 * nothing is written then.
 */
export interface PatientDirectory {
  find(ctx: Ctx, patientId: string): Promise<{ id: string } | null>
}
