import type { PatientContact } from '../domain/directories'
import type { ResolvedRecipient } from '../domain/rules'
import { systemQueue, type QueueSystemMessage, type SystemQueueOptions } from '../system-queue'
import type { OfferText } from './offer-text'

/** The template name of an offer's message (messages.template). */
export const OFFER_TEMPLATE = 'waitlist_offer'

/** An offer's message, addressed (`resolveRecipient`) and rendered; no appointment yet. */
export interface OfferMessage {
  patient: PatientContact
  recipient: ResolvedRecipient
  text: OfferText
}

/** Queues an offer's message in the consumer's transaction (QueueSystemMessage). */
export type QueueOfferMessage = QueueSystemMessage<OfferMessage>

/** An offer's message goes the way of every message (queueMessage), with no appointment yet. */
export const offerQueue = (o: SystemQueueOptions): QueueOfferMessage => systemQueue(o, OFFER_TEMPLATE)
