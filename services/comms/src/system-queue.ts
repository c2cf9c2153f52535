import type { Ctx } from '@clinic/platform/core'
import type { Knex } from 'knex'
import type { PatientContact } from './domain/directories'
import type { MessageTx } from './domain/message-store'
import { queueMessage, type AdmissionMetrics, type MessagingLimits } from './domain/queue-message'
import type { ResolvedRecipient } from './domain/rules'

/** A message comms writes itself (a reminder, a waitlist offer), addressed and rendered. */
export interface SystemMessage {
  patient: PatientContact
  /** To whom the patient's record says (the guardian where one is required): resolveRecipient. */
  recipient: ResolvedRecipient
  text: { subject: string; body: string }
  /** The appointment it is about; none for an offer (no appointment yet). */
  appointmentId?: string
}

/**
 * Queues a system message in the caller's transaction `trx` (consent, limits and the
 * `comms.message.queued` event as for any message): its id and whether it was suppressed. Throws
 * the send path's AppError when the destination or a limit refuses it (`retryAfterSeconds` when a
 * later try may pass).
 */
export type QueueSystemMessage<M extends SystemMessage = SystemMessage> = (
  trx: Knex.Transaction,
  ctx: Ctx,
  m: M,
) => Promise<{ id: string; suppressed: boolean }>

export interface SystemQueueOptions {
  /** The message store's side of company `companyId`'s transaction `trx` (messages-repository). */
  messageTx: (companyId: number, trx: Knex.Transaction) => MessageTx
  limits: MessagingLimits
  metrics?: AdmissionMetrics
}

/** System messages of `template` go the way of every message (queueMessage). */
export function systemQueue(o: SystemQueueOptions, template: string): QueueSystemMessage {
  return async (trx, ctx, m) => {
    const { message, suppressed } = await queueMessage(
      ctx,
      { tx: o.messageTx(ctx.auth.companyId, trx), limits: o.limits, metrics: o.metrics },
      {
        ...m.recipient,
        patient: m.patient,
        subject: m.recipient.channel === 'email' ? m.text.subject : null,
        body: m.text.body,
        template,
        appointment_id: m.appointmentId ?? null,
        override_guardian: false,
      },
    )
    return { id: message.id, suppressed }
  }
}
