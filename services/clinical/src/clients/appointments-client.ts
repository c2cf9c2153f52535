import { Type, type Static } from '@sinclair/typebox'
import { type Ctx } from '@clinic/platform/core'
import { lookUp } from '@clinic/platform/http'
import type { AppointmentDirectory } from '../domain/directory'
import type { ClientOptions } from './patients-client'

const AppointmentFound = Type.Object({ id: Type.String(), patient_id: Type.String() })

/**
 * The appointments service's internal lookup on behalf of the caller: its company and centers
 * apply as on `GET /appointments/:id`, so another company's (or a hidden center's) appointment is
 * 404 like a missing one. Anything but 200 or 404 is 503 upstream_unavailable.
 */
export class AppointmentsClient implements AppointmentDirectory {
  constructor(private readonly o: ClientOptions) {}

  async find(ctx: Ctx, appointmentId: string) {
    const found = await lookUp<Static<typeof AppointmentFound>>(ctx, this.o.signer, {
      service: 'appointments',
      baseUrl: this.o.baseUrl,
      path: `/internal/appointments/${encodeURIComponent(appointmentId)}`,
      timeoutMs: this.o.timeoutMs,
      answer: AppointmentFound,
    })
    return found ? { patient_id: found.patient_id } : undefined
  }
}
