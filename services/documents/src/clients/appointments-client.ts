import { Type } from '@sinclair/typebox'
import { UpstreamUnavailable, type Ctx } from '@clinic/platform/core'
import { callService } from '@clinic/platform/http'
import type { AppointmentDirectory } from '../domain/directories'
import type { ClientOptions } from './patients-client'

const AppointmentFound = Type.Object({ id: Type.String() })

/**
 * The appointments service's internal lookup, on behalf of the caller (its company and centers
 * apply as on `GET /appointments/:id`): 404 is "no such appointment"; down or odd is 503.
 */
export class AppointmentsClient implements AppointmentDirectory {
  constructor(private readonly o: ClientOptions) {}

  async exists(ctx: Ctx, appointmentId: string): Promise<boolean> {
    const answer = await callService(ctx, this.o.signer, {
      service: 'appointments',
      baseUrl: this.o.baseUrl,
      method: 'GET',
      path: `/internal/appointments/${encodeURIComponent(appointmentId)}`,
      timeoutMs: this.o.timeoutMs,
      answer: AppointmentFound,
    })
    if (answer.status === 200) return true
    if (answer.status === 404) return false
    ctx.log.warn(
      { upstream: 'appointments', status: answer.status },
      'unexpected answer to an appointment lookup',
    )
    throw new UpstreamUnavailable('The appointments service is unavailable; retry shortly')
  }
}
