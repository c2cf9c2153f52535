import { Type } from '@sinclair/typebox'
import { UpstreamUnavailable, type Ctx } from '@clinic/platform/core'
import { callService, lookUp } from '@clinic/platform/http'
import type { AppointmentDirectory, AppointmentInfo } from '../domain/appointment-directory'
import type { AppointmentResponder, LinkAction, LinkAnswer } from '../domain/patient-links'
import type { ClientOptions } from './patients-client'

/** What comms reads of an answer (AppointmentInfo); an answer without it is a failing upstream. */
const AppointmentAnswer = Type.Object({
  id: Type.String(),
  patient_id: Type.String(),
  codalmacen: Type.String(),
  practitioner: Type.String(),
  starts_at: Type.String(),
  ends_at: Type.String(),
  time_zone: Type.String(),
  status: Type.String(),
  version: Type.Integer(),
})

/**
 * The appointments service's internal lookup (reminders) and a patient's answer (patient links),
 * scoped to the caller's company.
 */
export class AppointmentsClient implements AppointmentDirectory, AppointmentResponder {
  constructor(private readonly o: ClientOptions) {}

  find(ctx: Ctx, appointmentId: string): Promise<AppointmentInfo | null> {
    return lookUp<AppointmentInfo>(ctx, this.o.signer, {
      service: 'appointments',
      baseUrl: this.o.baseUrl,
      path: `/internal/appointments/${encodeURIComponent(appointmentId)}`,
      timeoutMs: this.o.timeoutMs,
      answer: AppointmentAnswer,
    })
  }

  /** 200: done (the appointment as it is now); 404: not found; 409: not possible in its status. */
  async respond(ctx: Ctx, appointmentId: string, action: LinkAction): Promise<LinkAnswer> {
    const answer = await callService<AppointmentInfo>(ctx, this.o.signer, {
      service: 'appointments',
      baseUrl: this.o.baseUrl,
      method: 'POST',
      path: `/internal/appointments/${encodeURIComponent(appointmentId)}/respond`,
      body: { action },
      timeoutMs: this.o.timeoutMs,
      answer: AppointmentAnswer,
    })
    if (answer.status === 200 && answer.body) return { outcome: 'done', appointment: answer.body }
    if (answer.status === 404) return { outcome: 'not_found' }
    if (answer.status === 409) return { outcome: 'not_possible' }
    ctx.log.warn(
      { upstream: 'appointments', status: answer.status },
      "unexpected answer to a patient's response",
    )
    throw new UpstreamUnavailable('The appointments service is unavailable; retry shortly')
  }
}
