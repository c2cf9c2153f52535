import type {
  FhirRows,
  CloudEvent,
  FhirSearch,
  IdempotencyKey,
  KeysetAfter,
  StoredResponse,
  TenantStore,
  TenantTx,
} from '@clinic/platform/core'
import type { Patient, PatientFields, PatientSort } from '../schemas/patient'

/**
 * What the domain needs from storage. The implementation (db/repositories/patients-repository.ts)
 * scopes every statement by company, so a rule cannot forget it; unit tests can pass a fake.
 */
export interface PatientStore extends TenantStore<PatientTx, Patient> {
  /**
   * The new patient and its events, written together (both or neither); with an Idempotency-Key
   * at most once per key (`idempotent`: the first answer replayed). Throws DuplicateNationalId.
   */
  create(
    companyId: number,
    idempotency: IdempotencyKey,
    patient: { id: string; fields: PatientFields; events: CloudEvent[] },
  ): Promise<StoredResponse<Patient>>
  list(companyId: number, filter: ListFilter): Promise<{ rows: Patient[]; total: number }>
  /** A FHIR search (DESIGN.md section 19) within `centers` (null: all): one page and its total. */
  fhirSearch(companyId: number, centers: string[] | null, search: FhirSearch): Promise<FhirRows<Patient>>
}

export interface PatientTx extends TenantTx<Patient> {
  /** Throws DuplicateNationalId when another patient of the company has that national id. */
  insert(id: string, fields: PatientFields): Promise<Patient>
  /** Writes the given fields, bumps version and updated_at. Throws DuplicateNationalId too. */
  update(id: string, changes: Partial<PatientFields>): Promise<Patient>
}

export interface ListFilter {
  /** null: every center and patients without one; else only these centers. */
  centers: string[] | null
  q?: string
  sort: PatientSort
  offset: number
  /** Rows to return; the store fetches what it is asked for (the caller asks one more). */
  limit: number
  /** The position of a cursor of `PATIENT_KEYSETS[sort]` (list-patients.ts). */
  after?: KeysetAfter
}
