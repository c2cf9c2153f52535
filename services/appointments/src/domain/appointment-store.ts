import type { KeysetAfter, TenantStore, TenantTx } from '@clinic/platform/core'
import type {
  Appointment,
  AppointmentFields,
  AppointmentSort,
  AppointmentStatus,
} from '../schemas/appointment'
import type { Hold, Slot } from '../schemas/availability'
import type { NotWorking, SlotHolder } from './errors'

/**
 * What the domain needs from storage. The implementation (db/repositories) scopes every statement
 * by company and maps the database's overlap constraints onto SlotConflict; unit tests can pass
 * a fake.
 */
export interface AppointmentStore extends TenantStore<AppointmentTx, Appointment> {
  list(companyId: number, filter: ListFilter): Promise<{ rows: Appointment[]; total: number }>
  /** Free slots at a center, earliest first (DESIGN.md section 11); the past and expired holds per the store's clock. */
  availability(companyId: number, filter: AvailabilityFilter): Promise<Slot[]>
  /** The centers of what takes that time from the practitioner (live claims) or the patient. */
  conflictCenters(companyId: number, c: ConflictQuery): Promise<string[]>
}

export interface AvailabilityFilter {
  center: string
  /** RFC 3339 UTC: slots starting in [from, to). */
  from: string
  to: string
  /** Only these practitioners; undefined: every active one working at the center. */
  practitioners?: string[]
  /** Minutes each slot lasts; undefined: each practitioner's slot length. */
  duration?: number
  limit: number
}

export interface ConflictQuery {
  holder: SlotHolder
  practitioner: string
  patientId?: string
  starts_at: string
  ends_at: string
  /** An appointment being moved: not a conflict with itself. */
  self?: string
}

/** A time a practitioner may be claimed for. */
export interface Span {
  practitioner: string
  center: string
  starts_at: string
  ends_at: string
}

export interface AppointmentTx extends TenantTx<Appointment> {
  /** Throws SlotConflict when the practitioner or the patient already holds an overlapping slot. */
  insert(id: string, fields: AppointmentFields): Promise<Appointment>
  /**
   * Inserts appointments of one practitioner and one patient in one statement (a series' plan);
   * throws SlotConflict when any overlaps anything, and inserts none then.
   */
  insertMany(rows: Array<{ id: string; fields: AppointmentFields }>): Promise<Appointment[]>
  /**
   * Writes the given fields of `current` (read FOR UPDATE in this transaction), bumps version and
   * updated_at. Throws SlotConflict too.
   */
  update(current: Appointment, changes: Partial<AppointmentFields>): Promise<Appointment>
  /** Sets status checked_in and checked_in_at (the database's clock), bumps the version. */
  checkIn(id: string): Promise<Appointment>
  /** Whether a registered practitioner works then: null when the practitioner is not registered. */
  workingCheck(span: Span): Promise<NotWorking | 'ok' | null>
  /** A registered practitioner's time zone; null when `practitioner` is free text (not registered). */
  practitionerZone(practitioner: string): Promise<string | null>
  /**
   * Takes the transaction's locks on the practitioner's and the patient's calendars (in the one
   * order every claim takes them; again is harmless). Before reading a hold to convert: a claim
   * that waits on the hold's row while holding these locks would deadlock with one that waits on
   * the locks.
   */
  lockCalendars(practitioner: string, patientId: string | null): Promise<void>
  /** The live hold `id` of the company, locked until the transaction ends, or null. */
  findHold(id: string): Promise<Hold | null>
  /** Deletes the live hold `id` (of these centers, when given); false when there is none. */
  releaseHold(id: string, centers: string[] | null): Promise<boolean>
  /** Claims the time for a hold; throws SlotConflict when anything live overlaps it. */
  insertHold(hold: Omit<Hold, 'created_at'>): Promise<Hold>
}

export interface ListFilter {
  /** null: every center; else only these. */
  centers: string[] | null
  patientId?: string
  /** The occurrences of this series (DESIGN.md section 20). */
  seriesId?: string
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
