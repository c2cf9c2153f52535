import { makeEvent, type CloudEvent, type Ctx } from '@clinic/platform/core'

/**
 * `comms.patient_link.viewed`: a patient link's page was shown (actor `patient-link`, from the
 * link's ctx), its subject the appointment; the link's id and what the page said, never the token.
 */
export function linkViewedEvent(
  ctx: Pick<Ctx, 'auth' | 'requestId'>,
  view: { appointmentId: string; linkId: string; page: string },
): CloudEvent {
  return makeEvent({
    type: 'comms.patient_link.viewed',
    source: 'clinic/comms',
    subject: view.appointmentId,
    companyId: ctx.auth.companyId,
    ctx,
    data: { appointment_id: view.appointmentId, link_id: view.linkId, page: view.page },
  })
}
