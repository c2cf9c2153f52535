import { UpstreamUnavailable, type Ctx } from '@clinic/platform/core'
import { callService } from '@clinic/platform/http'
import type { PatientDirectory } from '../domain/patient-directory'

export interface PatientsClientOptions {
  /** PATIENTS_URL */
  baseUrl: string
  /** INTERNAL_AUTH_SECRET, shared with the gateway and the patients service. */
  secret: string
  timeoutMs: number
}

/**
 * The patients service's internal lookup, on behalf of the caller: the signed assertion carries
 * the caller's company (the patients service answers 404 for another company's patient, as for
 * one that does not exist) and the request id. Down, slow or 5xx is 503 upstream_unavailable
 * (platform `callService`); any other answer but 200 or 404 is treated the same way.
 */
export class PatientsClient implements PatientDirectory {
  constructor(private readonly o: PatientsClientOptions) {}

  async exists(ctx: Ctx, patientId: string): Promise<boolean> {
    const answer = await callService(ctx, this.o.secret, {
      service: 'patients',
      baseUrl: this.o.baseUrl,
      method: 'GET',
      path: `/internal/patients/${encodeURIComponent(patientId)}`,
      timeoutMs: this.o.timeoutMs,
    })
    if (answer.status === 200) return true
    if (answer.status === 404) return false
    ctx.log.warn({ upstream: 'patients', status: answer.status }, 'unexpected answer to a patient lookup')
    throw new UpstreamUnavailable('The patients service is unavailable; retry shortly')
  }
}
