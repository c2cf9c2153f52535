import { Type } from '@sinclair/typebox'
import { type AssertionSigner, type Ctx } from '@clinic/platform/core'
import { lookUp } from '@clinic/platform/http'
import type { PatientDirectory } from '../domain/patient-directory'

export interface PatientsClientOptions {
  /** PATIENTS_URL */
  baseUrl: string
  /** This service's own key (SERVICE_SIGNING_KEY): patients takes it on its internal lookup only. */
  signer: AssertionSigner
  timeoutMs: number
}

/** What a 200 must be: the patient asked for (anything else is a failing upstream). */
const PatientFound = Type.Object({ id: Type.String() })

/**
 * The patients service's internal lookup, on behalf of the caller: the signed assertion carries
 * the caller's company (the patients service answers 404 for another company's patient, as for
 * one that does not exist) and the request id. Down, slow or 5xx is 503 upstream_unavailable
 * (platform `callService`); any other answer but 200 or 404 is treated the same way.
 */
export class PatientsClient implements PatientDirectory {
  constructor(private readonly o: PatientsClientOptions) {}

  async exists(ctx: Ctx, patientId: string): Promise<boolean> {
    const found = await lookUp(ctx, this.o.signer, {
      service: 'patients',
      baseUrl: this.o.baseUrl,
      path: `/internal/patients/${encodeURIComponent(patientId)}`,
      timeoutMs: this.o.timeoutMs,
      answer: PatientFound,
    })
    return found !== null
  }
}
