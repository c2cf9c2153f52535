import type { TenantStore } from '@clinic/platform/core'
import type { Appointment } from '../schemas/appointment'
import type { SeriesStatus, SkippedOccurrence } from '../schemas/series'
import type { AppointmentStore, AppointmentTx, ConflictQuery } from './appointment-store'

/** A series as stored (DESIGN.md section 20); its occurrences are appointments naming it. */
export interface SeriesRow {
  id: string
  patient_id: string
  practitioner: string
  codalmacen: string
  time_zone: string
  /** The first occurrence's local wall time, `YYYY-MM-DDTHH:MM`. */
  start: string
  duration_minutes: number
  rrule: string
  exdates: string[]
  reason: string | null
  notes: string | null
  status: SeriesStatus
  previous_series_id: string | null
  next_series_id: string | null
  skipped: SkippedOccurrence[]
  created_at: string
  updated_at: string
  version: number
}

/** What a series' own row holds beyond its id and timestamps. */
export type SeriesValues = Omit<SeriesRow, 'id' | 'created_at' | 'updated_at' | 'version'>

/** An occurrence as the series' changes read it: the appointment and whether it was changed on its own. */
export interface Occurrence extends Appointment {
  series_id: string
  occurrence: number
  recurrence_id: string
  series_exception: boolean
}

/** What the series use cases need from storage, on top of the calendar's. */
export interface SeriesStore extends TenantStore<SeriesTx, SeriesRow> {
  availability: AppointmentStore['availability']
  conflictCenters: AppointmentStore['conflictCenters']
  /** A registered practitioner's time zone, or null for a practitioner with no record. */
  practitionerZone(companyId: number, practitioner: string): Promise<string | null>
  /** The series' appointments (any status), by occurrence. */
  occurrences(companyId: number, seriesId: string): Promise<Appointment[]>
}

export interface SeriesTx extends AppointmentTx {
  /**
   * Runs `fn` in a savepoint: when it throws, what it wrote is undone and the transaction goes on
   * (so every occurrence of a series is tried, and every conflict listed).
   */
  savepoint<T>(fn: () => Promise<T>): Promise<T>
  insertSeries(id: string, values: SeriesValues): Promise<SeriesRow>
  /** The series of the company (locked until the transaction ends with `forUpdate`), or null. */
  findSeries(id: string, opts?: { forUpdate?: boolean }): Promise<SeriesRow | null>
  /** Writes `values`, bumps version and updated_at. */
  updateSeries(id: string, values: Partial<SeriesValues>): Promise<SeriesRow>
  /** The series' appointments by occurrence, locked until the transaction ends. */
  lockOccurrences(seriesId: string): Promise<Occurrence[]>
  /** The centers of what takes that time (AppointmentStore.conflictCenters), read in this transaction. */
  conflictCenters(c: ConflictQuery): Promise<string[]>
  /** Marks appointments as changed on their own (series_exception), or not. */
  setException(ids: string[], exception: boolean): Promise<void>
}
