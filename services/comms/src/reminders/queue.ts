import { uuidv7 } from '@clinic/platform/core'
import { enqueueEvents } from '@clinic/platform/events'
import { messageEvent } from '../events/message-events'
import { MESSAGE_COLUMNS, TABLE, toMessage } from '../db/repositories/messages-repository'
import type { QueueReminderMessage } from './worker'

/** A reminder's message through the send path (consent, limits, the queued event). */
export const queueReminderMessage: QueueReminderMessage = async (trx, ctx, m) => {
  const [row] = await trx(TABLE)
    .insert({
      idempresa: ctx.auth.companyId,
      id: uuidv7(),
      patient_id: m.patient.id,
      appointment_id: m.appointmentId,
      codalmacen: m.patient.codalmacen,
      channel: m.recipient.channel,
      recipient_role: m.recipient.role,
      recipient_name: m.recipient.name,
      recipient_address: m.recipient.address,
      language: m.patient.language,
      subject: m.recipient.channel === 'email' ? m.text.subject : null,
      body: m.text.body,
      template: 'appointment_reminder',
    })
    .returning(MESSAGE_COLUMNS)
  const message = toMessage(row as Record<string, unknown>)
  await enqueueEvents(trx, [messageEvent('comms.message.queued', ctx.auth.companyId, message, { ctx })])
  return { id: message.id, suppressed: false }
}
