import { messageEvent } from '../events/message-events'
import type { MessageStore, Receipt } from './message-store'

/** Twilio's MessageStatus values that end an SMS's delivery, as the message records them. */
const RECEIPTS: Record<string, Receipt['status']> = {
  delivered: 'delivered',
  undelivered: 'undelivered',
  failed: 'undelivered',
}

/** The fields of a Twilio status callback (its form, already authenticated by its signature). */
export interface ApplyReceipt {
  MessageSid?: string
  MessageStatus?: string
  ErrorCode?: string
}

/**
 * Moves a sent SMS to delivered or undelivered, with its `comms.message.delivered` event in the same
 * transaction. A receipt is Twilio's word: the event names no actor. Other statuses (queued, sent)
 * and unknown sids change nothing. Null when the callback is no final receipt; else how many
 * messages it changed.
 */
export async function applyReceipt(
  store: Pick<MessageStore, 'receiptTransaction'>,
  input: ApplyReceipt,
): Promise<{ receipt: Receipt['status']; matched: number } | null> {
  const given = input.MessageStatus ?? ''
  const status = Object.hasOwn(RECEIPTS, given) ? RECEIPTS[given] : undefined
  const sid = input.MessageSid
  if (!status || !sid) return null
  const receipt: Receipt = {
    providerId: sid,
    status,
    error: input.ErrorCode ? `twilio error ${input.ErrorCode}` : null,
  }
  const matched = await store.receiptTransaction(async (tx) => {
    const changed = await tx.apply(receipt)
    await tx.publish(
      changed.map(({ companyId, message }) => messageEvent('comms.message.delivered', companyId, message)),
    )
    return changed.length
  })
  return { receipt: status, matched }
}
