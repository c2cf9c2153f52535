import { Type } from '@sinclair/typebox'
import { type Ctx } from '@clinic/platform/core'
import { lookUp } from '@clinic/platform/http'
import type { AppointmentDirectory, OwnedRecord } from '../domain/directories'
import type { ClientOptions } from './patients-client'

const AppointmentFound = Type.Object({ id: Type.String(), patient_id: Type.String() })

/**
 * The appointments service's internal lookup, on behalf of the caller (its company and centers
 * apply as on `GET /appointments/:id`): 404 is "no such appointment"; down or odd is 503.
 */
export class AppointmentsClient implements AppointmentDirectory {
  constructor(private readonly o: ClientOptions) {}

  find(ctx: Ctx, appointmentId: string): Promise<OwnedRecord | null> {
    return lookUp<OwnedRecord>(ctx, this.o.signer, {
      service: 'appointments',
      baseUrl: this.o.baseUrl,
      path: `/internal/appointments/${encodeURIComponent(appointmentId)}`,
      timeoutMs: this.o.timeoutMs,
      answer: AppointmentFound,
    })
  }
}
