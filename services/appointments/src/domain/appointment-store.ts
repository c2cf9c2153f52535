import type { KeysetAfter, TenantStore, TenantTx } from '@clinic/platform/core'
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
export interface AppointmentStore extends TenantStore<AppointmentTx, Appointment> {
  list(companyId: number, filter: ListFilter): Promise<{ rows: Appointment[]; total: number }>
}

export interface AppointmentTx extends TenantTx<Appointment> {
  /** Throws SlotConflict when the practitioner or the patient already holds an overlapping slot. */
  insert(id: string, fields: AppointmentFields): Promise<Appointment>
  /**
   * Writes the given fields of `current` (read FOR UPDATE in this transaction), bumps version and
   * updated_at. Throws SlotConflict too.
   */
  update(current: Appointment, changes: Partial<AppointmentFields>): Promise<Appointment>
  /** Sets status checked_in and checked_in_at (the database's clock), bumps the version. */
  checkIn(id: string): Promise<Appointment>
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
  /** The position of a cursor of `APPOINTMENT_KEYSETS[sort]` (list-appointments.ts). */
  after?: KeysetAfter
}
