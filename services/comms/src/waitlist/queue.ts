import type { Ctx } from '@clinic/platform/core'
import type { Knex } from 'knex'
import type { PatientContact } from '../domain/directories'
import type { MessageTx } from '../domain/message-store'
import { queueMessage, type AdmissionMetrics, type MessagingLimits } from '../domain/queue-message'
import type { ResolvedRecipient } from '../domain/rules'
import type { OfferText } from './offer-text'

/** The template name of an offer's message (messages.template). */
export const OFFER_TEMPLATE = 'waitlist_offer'

/** An offer's message, addressed (`resolveRecipient`) and rendered. */
export interface OfferMessage {
  patient: PatientContact
  recipient: ResolvedRecipient
  text: OfferText
}

/**
 * Queues an offer's message in the consumer's transaction `trx` (consent, limits and the
 * `comms.message.queued` event as for any message): its id and whether it was suppressed. Throws
 * the send path's AppError when the destination or a limit refuses it.
 */
export type QueueOfferMessage = (
  trx: Knex.Transaction,
  ctx: Ctx,
  m: OfferMessage,
) => Promise<{ id: string; suppressed: boolean }>

/** An offer's message goes the way of every message (queueMessage), with no appointment yet. */
export function offerQueue(o: {
  /** The message store's side of company `companyId`'s transaction `trx` (messages-repository). */
  messageTx: (companyId: number, trx: Knex.Transaction) => MessageTx
  limits: MessagingLimits
  metrics?: AdmissionMetrics
}): QueueOfferMessage {
  return async (trx, ctx, m) => {
    const { message, suppressed } = await queueMessage(
      ctx,
      { tx: o.messageTx(ctx.auth.companyId, trx), limits: o.limits, metrics: o.metrics },
      {
        ...m.recipient,
        patient: m.patient,
        subject: m.recipient.channel === 'email' ? m.text.subject : null,
        body: m.text.body,
        template: OFFER_TEMPLATE,
        appointment_id: null,
        override_guardian: false,
      },
    )
    return { id: message.id, suppressed }
  }
}
