import { makeEvent, type CloudEvent, type Ctx } from '@clinic/platform/core'
import type { Message } from '../schemas/message'

type MessageEventType =
  | 'comms.message.queued'
  | 'comms.message.suppressed'
  | 'comms.message.sent'
  | 'comms.message.failed'
  | 'comms.message.delivered'

/**
 * Ids, channel, role and status only: never the body, the subject or the address. The admission
 * events (queued, suppressed) also carry `override_guardian: true` when the send overrode the
 * guardian rule, for the audit trail.
 */
export function messageEvent(
  type: MessageEventType,
  companyId: number,
  m: Pick<Message, 'id' | 'patient_id' | 'appointment_id' | 'channel' | 'status' | 'codalmacen'> & {
    recipient: { role: string }
    override_guardian?: boolean
  },
  who?: { ctx?: Pick<Ctx, 'auth' | 'requestId'> },
): CloudEvent {
  return makeEvent({
    type,
    source: 'clinic/comms',
    subject: m.id,
    companyId,
    codalmacen: m.codalmacen,
    ctx: who?.ctx,
    data: {
      id: m.id,
      patient_id: m.patient_id,
      appointment_id: m.appointment_id,
      channel: m.channel,
      recipient_role: m.recipient.role,
      status: m.status,
      ...(m.override_guardian && (type === 'comms.message.queued' || type === 'comms.message.suppressed')
        ? { override_guardian: true as const }
        : {}),
    },
  })
}
