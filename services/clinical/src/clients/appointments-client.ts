import { Type, type Static } from '@sinclair/typebox'
import { UpstreamUnavailable, type Ctx } from '@clinic/platform/core'
import { callService } from '@clinic/platform/http'
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
    const answer = await callService(ctx, this.o.signer, {
      service: 'appointments',
      baseUrl: this.o.baseUrl,
      method: 'GET',
      path: `/internal/appointments/${encodeURIComponent(appointmentId)}`,
      timeoutMs: this.o.timeoutMs,
      answer: AppointmentFound,
    })
    if (answer.status === 200)
      return { patient_id: (answer.body as Static<typeof AppointmentFound>).patient_id }
    if (answer.status === 404) return undefined
    ctx.log.warn(
      { upstream: 'appointments', status: answer.status },
      'unexpected answer to an appointment lookup',
    )
    throw new UpstreamUnavailable('The appointments service is unavailable; retry shortly')
  }
}
