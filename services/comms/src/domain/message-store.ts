import type { CloudEvent, StoredResponse } from '@clinic/platform/core'
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
}

export interface MessageTx {
  insert(id: string, fields: NewMessage): Promise<VersionedMessage>
  publish(events: CloudEvent[]): Promise<void>
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
  /** Keyset: rows strictly older than this (created_at, id), newest first. */
  after?: { created_at: string; id: string }
  offset: number
  limit: number
}

export interface MessageStore {
  idempotent<B>(
    companyId: number,
    idempotency: { tokenId: string; key: string | undefined; hash: string },
    fn: (tx: MessageTx) => Promise<StoredResponse<B>>,
  ): Promise<StoredResponse<B>>
  /**
   * The stored answer of an Idempotency-Key already used by this token (replayed: true), null for a
   * new key; the same key with another request hash is `IdempotencyConflict`.
   */
  storedResponse<B>(
    companyId: number,
    idempotency: { tokenId: string; key: string; hash: string },
  ): Promise<StoredResponse<B> | null>
  findById(companyId: number, id: string): Promise<VersionedMessage | null>
  /** limit + 1 rows (the extra one says a next page exists) and the exact total. */
  list(companyId: number, f: ListFilter): Promise<{ rows: VersionedMessage[]; total: number }>
}
