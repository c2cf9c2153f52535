import type { DateBound, FhirRows, FhirSearch } from '@clinic/platform/core'
import type { Appointment, AppointmentStatus } from '../schemas/appointment'
import type { Practitioner } from '../schemas/practitioner'

/**
 * What the FHIR read and search use cases (fhir-resources.ts) need from storage
 * (db/repositories/fhir-repository.ts). Every method takes the company and the token's centers
 * (null: every center); each search's shared part (`_id`, `_lastUpdated`, order, cursor, total)
 * is the platform's fhirSearchPage, so each answers one page, its exact total and the next cursor.
 */
export interface FhirStore {
  practitioner(companyId: number, centers: string[] | null, id: string): Promise<Practitioner | null>
  practitioners(companyId: number, centers: string[] | null, s: FhirSearch): Promise<FhirRows<Practitioner>>
  schedule(companyId: number, centers: string[] | null, id: string): Promise<ScheduleRow | null>
  schedules(companyId: number, centers: string[] | null, s: FhirSearch): Promise<FhirRows<ScheduleRow>>
  slot(companyId: number, q: SlotQuery, id: string): Promise<SlotRow | null>
  slots(companyId: number, q: SlotQuery, s: FhirSearch): Promise<FhirRows<SlotRow>>
  appointment(companyId: number, centers: string[] | null, id: string): Promise<AppointmentRow | null>
  appointments(companyId: number, f: AppointmentFilter, s: FhirSearch): Promise<FhirRows<AppointmentRow>>
}

/** One practitioner at one center where they have working hours (its id: fhir-mapping.ts). */
export interface ScheduleRow {
  id: string
  practitioner: Practitioner
  codalmacen: string
}

/** A free slot of a schedule's grid, or what takes a time there (an appointment or a live hold). */
export interface SlotRow {
  id: string
  schedule_id: string
  status: 'free' | 'busy'
  starts_at: string
  ends_at: string
  updated_at: string
}

/** An appointment and the name of its practitioner when registered (else null: free text). */
export type AppointmentRow = Appointment & { practitioner_name: string | null }

/**
 * The slots searched: those starting in [from, to) of the schedules at these centers, and of
 * these schedule ids (each inner list one parameter's alternatives, every list must match).
 */
export interface SlotQuery {
  centers: string[] | null
  schedules: string[][]
  statuses: Array<Array<SlotRow['status']>>
  from: string
  to: string
  /** Free slots start at or after it; holds that expired before it take nothing. */
  now: string
}

/** An Appointment search's own parameters, in our terms (the lists AND, their values OR). */
export interface AppointmentFilter {
  centers: string[] | null
  locations: string[][]
  patients: string[][]
  practitioners: string[][]
  statuses: AppointmentStatus[][]
  starts: DateBound[]
}
