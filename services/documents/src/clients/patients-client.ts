import { PatientContact as PatientContactSchema, type AssertionSigner, type Ctx } from '@clinic/platform/core'
import { lookUp } from '@clinic/platform/http'
import type { PatientContact, PatientDirectory } from '../domain/directories'

export interface ClientOptions {
  /** PATIENTS_URL, APPOINTMENTS_URL, CLINICAL_URL or COMMS_URL */
  baseUrl: string
  /** documents' own key (SERVICE_SIGNING_KEY), taken only on the internal routes that name documents. */
  signer: AssertionSigner
  timeoutMs: number
}

/**
 * The patients service's internal lookup, on behalf of the caller: the signed assertion carries the
 * caller's company, so another company's patient is a 404 like a missing one. Down, slow or 5xx is
 * 503 upstream_unavailable (platform `callService`); any other unexpected answer too.
 */
export class PatientsClient implements PatientDirectory {
  constructor(private readonly o: ClientOptions) {}

  contact(ctx: Ctx, patientId: string): Promise<PatientContact | null> {
    return lookUp<PatientContact>(ctx, this.o.signer, {
      service: 'patients',
      baseUrl: this.o.baseUrl,
      path: `/internal/patients/${encodeURIComponent(patientId)}`,
      timeoutMs: this.o.timeoutMs,
      answer: PatientContactSchema,
    })
  }
}
