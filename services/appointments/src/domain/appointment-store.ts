import type { CloudEvent, StoredResponse } from '@clinic/platform/core'
import type {
  Appointment,
  AppointmentFields,
  AppointmentSort,
  AppointmentStatus,
} from '../schemas/appointment'

/**
 * What the domain needs from storage. The implementation (db/repositories) scopes every statement
 * by company and maps the database's overlap constraints onto SlotConflict; unit tests can pass
 * a fake.
 */
export interface AppointmentStore {
  /** One transaction in which every statement is limited to this company. */
  transaction<T>(companyId: number, fn: (tx: AppointmentTx) => Promise<T>): Promise<T>
  /** Like `transaction`, but runs `fn` at most once per Idempotency-Key (replays the stored answer). */
  idempotent<B>(
    companyId: number,
    idempotency: { tokenId: string; key: string | undefined; hash: string },
    fn: (tx: AppointmentTx) => Promise<StoredResponse<B>>,
  ): Promise<StoredResponse<B>>
  /**
   * The stored answer of an earlier request with this Idempotency-Key (`replayed`), or null when
   * there is none (no key, a new or expired key, or one still in flight). The same key with another
   * request is IdempotencyConflict. Writes nothing: a retry is answered before any other lookup.
   */
  storedResponse<B>(
    companyId: number,
    idempotency: { tokenId: string; key: string | undefined; hash: string },
  ): Promise<StoredResponse<B> | null>
  findById(companyId: number, id: string): Promise<Appointment | null>
  list(companyId: number, filter: ListFilter): Promise<{ rows: Appointment[]; total: number }>
}

export interface AppointmentTx {
  findById(id: string, opts?: { forUpdate?: boolean }): Promise<Appointment | null>
  /** Throws SlotConflict when the practitioner or the patient already holds an overlapping slot. */
  insert(id: string, fields: AppointmentFields): Promise<Appointment>
  /**
   * Writes the given fields of `current` (read FOR UPDATE in this transaction), bumps version and
   * updated_at. Throws SlotConflict too.
   */
  update(current: Appointment, changes: Partial<AppointmentFields>): Promise<Appointment>
  /** Sets status checked_in and checked_in_at (the database's clock), bumps the version. */
  checkIn(id: string): Promise<Appointment>
  /** Adds events to the outbox in this transaction. */
  publish(events: CloudEvent[]): Promise<void>
}

/** Keyset position: the sort values of the last row of the previous page. */
export interface ListCursor {
  starts_at: string
  id: string
}

export interface ListFilter {
  /** null: every center; else only these. */
  centers: string[] | null
  patientId?: string
  practitioner?: string
  statuses?: AppointmentStatus[]
  /** starts_at >= from */
  from?: string
  /** starts_at < to */
  to?: string
  sort: AppointmentSort
  offset: number
  /** Rows to return; the store fetches what it is asked for (the caller asks one more). */
  limit: number
  after?: ListCursor
}
