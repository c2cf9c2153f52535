import type { Knex } from 'knex'
import type { MessageTx } from '../domain/message-store'
import { queueMessage, type AdmissionMetrics, type MessagingLimits } from '../domain/queue-message'
import type { QueueReminderMessage } from './worker'

/**
 * A reminder's message goes the way of every message (queueMessage): destination, consent and
 * the messaging limits, then the row with its `comms.message.queued` event, in the reminder's
 * transaction. Always to whom the patient's record says (the guardian where one is required).
 */
export function reminderQueue(o: {
  /** The message store's side of company `companyId`'s transaction `trx` (messages-repository). */
  messageTx: (companyId: number, trx: Knex.Transaction) => MessageTx
  limits: MessagingLimits
  metrics?: AdmissionMetrics
}): QueueReminderMessage {
  return async (trx, ctx, m) => {
    const { message, suppressed } = await queueMessage(
      ctx,
      { tx: o.messageTx(ctx.auth.companyId, trx), limits: o.limits, metrics: o.metrics },
      {
        ...m.recipient,
        patient: m.patient,
        subject: m.recipient.channel === 'email' ? m.text.subject : null,
        body: m.text.body,
        template: 'appointment_reminder',
        appointment_id: m.appointmentId,
        override_guardian: false,
      },
    )
    return { id: message.id, suppressed }
  }
}
