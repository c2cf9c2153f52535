import type { KeysetAfter, TenantStore, TenantTx } from '@clinic/platform/core'
import type { Practitioner, PractitionerFields, TimeOff } from '../schemas/practitioner'

/**
 * What the practitioner use cases need from storage (db/repositories/practitioners-repository.ts
 * scopes every statement by company).
 */
export interface PractitionerStore extends TenantStore<PractitionerTx, Practitioner> {
  list(companyId: number, filter: PractitionerFilter): Promise<{ rows: Practitioner[]; total: number }>
  listTimeOff(companyId: number, filter: TimeOffFilter): Promise<{ rows: TimeOff[]; total: number }>
}

export interface PractitionerTx extends TenantTx<Practitioner> {
  /** Throws DuplicatePractitioner when the company has one with that id. */
  insert(id: string, fields: PractitionerFields): Promise<Practitioner>
  /** Writes these fields, bumps version and updated_at. */
  update(id: string, values: Partial<PractitionerFields>): Promise<Practitioner>
  addTimeOff(t: Omit<TimeOff, 'created_at'>): Promise<TimeOff>
  /** False when the practitioner has no such time off. */
  deleteTimeOff(practitioner: string, id: string): Promise<boolean>
}

interface Paging<K extends string> {
  offset: number
  limit: number
  after?: KeysetAfter<K>
}

export interface PractitionerFilter extends Paging<'id'> {
  /** null: every practitioner; else those with working hours at one of these centers. */
  centers: string[] | null
  active?: boolean
}

export interface TimeOffFilter extends Paging<'starts_at' | 'id'> {
  practitioner: string
  /** Time off that ends after this instant. */
  from?: string
  /** Time off that starts before this instant. */
  to?: string
}
