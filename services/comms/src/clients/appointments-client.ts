import { UpstreamUnavailable, type Ctx } from '@clinic/platform/core'
import { callService } from '@clinic/platform/http'
import type { AppointmentDirectory, AppointmentInfo } from '../domain/appointment-directory'
import type { ClientOptions } from './patients-client'

/** The appointments service's internal lookup (reminders), scoped to the caller's company. */
export class AppointmentsClient implements AppointmentDirectory {
  constructor(private readonly o: ClientOptions) {}

  async find(ctx: Ctx, appointmentId: string): Promise<AppointmentInfo | null> {
    const answer = await callService<AppointmentInfo>(ctx, this.o.secret, {
      service: 'appointments',
      baseUrl: this.o.baseUrl,
      method: 'GET',
      path: `/internal/appointments/${encodeURIComponent(appointmentId)}`,
      timeoutMs: this.o.timeoutMs,
    })
    if (answer.status === 200 && answer.body) return answer.body
    if (answer.status === 404) return null
    ctx.log.warn(
      { upstream: 'appointments', status: answer.status },
      'unexpected answer to an appointment lookup',
    )
    throw new UpstreamUnavailable('The appointments service is unavailable; retry shortly')
  }
}
