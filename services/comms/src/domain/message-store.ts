import type { CloudEvent, KeysetAfter, OutboxTx, TenantStore } from '@clinic/platform/core'
import type { Channel, MessageStatus, RecipientRole, VersionedMessage } from '../schemas/message'

/** What a send writes; status, attempts and timestamps start at their defaults. */
export interface NewMessage {
  patient_id: string
  appointment_id: string | null
  codalmacen: string | null
  channel: Channel
  recipient_role: RecipientRole
  recipient_name: string
  recipient_address: string
  language: string
  subject: string | null
  body: string
  template: string | null
  /** Sent to a patient who requires a guardian, on purpose (`override_guardian` of the send). */
  override_guardian: boolean
  /** `suppressed`: kept for the record, never sent (the address opted out). Default `queued`. */
  status?: 'queued' | 'suppressed'
  /** Who queued it and in which request (`causeOf`): the delivery's sent or failed event names them. */
  cause: Pick<CloudEvent, 'actorid' | 'actorname' | 'actortokenid' | 'requestid'>
}

/** A quota's verdict: room for one more, or how long until there is (seconds, at least 1). */
export type QuotaCheck = { admitted: true } | { admitted: false; retryAfterSeconds: number }

export interface MessageTx extends OutboxTx {
  insert(id: string, fields: NewMessage): Promise<VersionedMessage>
  /** Whether this company holds an opt-out for the address on the channel (`preferences`). */
  optedOut(channel: Channel, address: string): Promise<boolean>
  /**
   * The hourly quota of one recipient address: takes a lock on (company, address) held to the end
   * of the transaction, so concurrent admissions to it (any replica) count one after the other, then
   * counts the messages to it not suppressed in the last hour (database time) against `limit`.
   */
  admitToAddress(address: string, limit: number): Promise<QuotaCheck>
  /**
   * Counts one more message of the company's UTC day on `channel` (`daily_counts`), in one atomic
   * statement, unless the count has reached `limit`; then nothing is counted and the answer says
   * how long until the next UTC day.
   */
  admitToday(channel: Channel, limit: number): Promise<QuotaCheck>
}

export interface ListFilter {
  centers: string[] | null
  patientId?: string
  appointmentId?: string
  /** `queued` also finds `sending` rows (shown as queued). */
  status?: MessageStatus
  channel?: Channel
  from?: string
  to?: string
  /** The position of a cursor of `MESSAGE_KEYSET` (read-messages.ts): rows strictly past it. */
  after?: KeysetAfter
  offset: number
  /** Rows to return; the store fetches what it is asked for (the caller asks one more). */
  limit: number
}

/** A Twilio status callback as the store applies it. */
export interface Receipt {
  /** Twilio's MessageSid: the provider_id of a sent SMS, of any company. */
  providerId: string
  status: 'delivered' | 'undelivered'
  /** last_error to record ('twilio error 30003'), or null. */
  error: string | null
}

export interface ReceiptTx extends OutboxTx {
  /**
   * Applies the receipt to the SMS it names (or keeps it until the worker records the sid): the
   * messages it changed, with their company.
   */
  apply(receipt: Receipt): Promise<Array<{ companyId: number; message: VersionedMessage }>>
}

export interface MessageStore extends TenantStore<MessageTx, VersionedMessage> {
  list(companyId: number, f: ListFilter): Promise<{ rows: VersionedMessage[]; total: number }>
  /** One transaction for a provider's receipt: no company is known before it names the message. */
  receiptTransaction<T>(fn: (tx: ReceiptTx) => Promise<T>): Promise<T>
}
