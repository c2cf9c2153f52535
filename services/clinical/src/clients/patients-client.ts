import { Type, type Static } from '@sinclair/typebox'
import { type AssertionSigner, type Ctx } from '@clinic/platform/core'
import { lookUp } from '@clinic/platform/http'
import type { PatientDirectory } from '../domain/directory'

export interface ClientOptions {
  baseUrl: string
  /** This service's own key (SERVICE_SIGNING_KEY): the called service takes it on its internal lookup only. */
  signer: AssertionSigner
  timeoutMs: number
}

/** What a 200 must be: the patient asked for, with its home center. */
const PatientFound = Type.Object({ id: Type.String(), codalmacen: Type.Union([Type.String(), Type.Null()]) })

/**
 * The patients service's internal lookup on behalf of the caller (its company in the signed
 * assertion: another company's patient is 404 like a missing one). Down, slow, 5xx or any other
 * answer but 200 or 404 is 503 upstream_unavailable.
 */
export class PatientsClient implements PatientDirectory {
  constructor(private readonly o: ClientOptions) {}

  async find(ctx: Ctx, patientId: string) {
    const found = await lookUp<Static<typeof PatientFound>>(ctx, this.o.signer, {
      service: 'patients',
      baseUrl: this.o.baseUrl,
      path: `/internal/patients/${encodeURIComponent(patientId)}`,
      timeoutMs: this.o.timeoutMs,
      answer: PatientFound,
    })
    return found ? { codalmacen: found.codalmacen } : undefined
  }
}
