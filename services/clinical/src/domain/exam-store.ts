import type { FhirRows, FhirSearch, KeysetAfter, TenantStore, TenantTx } from '@clinic/platform/core'
import type {
  ExamFields,
  ExamRow,
  ExamStatus,
  HistoryEntry,
  Measurement,
  Prescription,
} from '../schemas/exam'
import type { FindingKind } from './finding-rules'

/** A finding as stored: its kind's own fields in `data`. */
export interface FindingRecord {
  id: string
  exam_id: string
  kind: FindingKind
  eye: string
  data: Record<string, unknown>
  state: 'live' | 'superseded'
  recorded_at: string
  recorded_by: string
  /** The exam's version that added it (an amendment's, when an amendment did). */
  added_in: number
}

/** A new history row: the exam's version after the change, who, why and what. */
export interface HistoryRecord {
  version: number
  action: HistoryEntry['action']
  userId: string
  username: string
  reason?: string | null
  fields?: string[]
  added?: string[]
  superseded?: string[]
}

/**
 * What the clinical domain needs from storage. The implementation (db/repositories) scopes every
 * statement by company under row-level security; unit tests can pass a fake.
 */
export interface ExamStore extends TenantStore<ExamTx, ExamRow> {
  list(companyId: number, filter: ExamFilter): Promise<{ rows: ExamRow[]; total: number }>
  /** The findings (live and superseded) and prescriptions of these exams, in the order recorded. */
  contents(
    companyId: number,
    examIds: string[],
  ): Promise<{ findings: FindingRecord[]; prescriptions: Prescription[] }>
  history(companyId: number, examId: string): Promise<HistoryEntry[]>
  prescription(companyId: number, id: string): Promise<Prescription | null>
  /** Live findings of signed exams of one patient, oldest first (the trend index). */
  trend(companyId: number, filter: TrendFilter): Promise<{ rows: Measurement[]; total: number }>
}

export interface ExamTx extends TenantTx<ExamRow> {
  insert(id: string, fields: ExamFields): Promise<ExamRow>
  /** Writes these columns, bumps version and updated_at. */
  update(id: string, values: Partial<ExamRow>): Promise<ExamRow>
  /** Bumps version and updated_at only (a finding added or removed changes the exam). */
  touch(id: string, extra?: Partial<Pick<ExamRow, 'amendments'>>): Promise<ExamRow>
  findings(examId: string): Promise<FindingRecord[]>
  /** The exam's prescriptions, in the order issued. */
  prescriptions(examId: string): Promise<Prescription[]>
  insertFinding(
    exam: ExamRow,
    f: { id: string; kind: FindingKind; eye: string; data: Record<string, unknown>; addedIn: number },
    recordedBy: string,
  ): Promise<FindingRecord>
  /** Deletes a finding of a draft exam; false when the exam has no such finding of that kind. */
  deleteFinding(examId: string, kind: FindingKind, findingId: string): Promise<boolean>
  /** Marks these live findings superseded in `version`; returns the ids it marked. */
  supersede(examId: string, ids: string[], version: number): Promise<string[]>
  /** At signing (and for findings added by an amendment): the trend columns of the exam's findings. */
  markSigned(exam: ExamRow): Promise<void>
  record(examId: string, h: HistoryRecord): Promise<void>
  insertPrescription(p: Omit<Prescription, 'issued_at' | 'version'>): Promise<Prescription>
}

export interface ExamFilter {
  centers: string[] | null
  patientId?: string
  practitioner?: string
  status?: ExamStatus
  from?: string
  to?: string
  offset: number
  limit: number
  after?: KeysetAfter
}

export interface TrendFilter {
  patientId: string
  type: 'iop' | 'visual_acuity'
  eyes: string[] | null
  /** Acuity kind or IOP method. */
  kind?: string
  from?: string
  to?: string
  centers: string[] | null
  limit: number
}

/** Which findings an Observation `code` names: the kind, and an acuity's own kind. */
export interface ObservationSelector {
  kind: Exclude<FindingKind, 'diagnoses'>
  acuityKind?: string
}

/** A finding with what its FHIR resource reads of its exam (one join), and the exam's last update. */
export interface FhirFindingRecord extends FindingRecord {
  exam: Pick<
    ExamRow,
    'id' | 'patient_id' | 'codalmacen' | 'practitioner' | 'performed_at' | 'status' | 'version' | 'amendments'
  > & { updated_at: string }
}
/**
 * Which findings a FHIR search reads: `kinds` (Observation: the measurements; Condition:
 * diagnoses), `codes` (Observation `code`: each occurrence its alternatives), and what `date` is
 * on (`effective`: IOP's measured_at, else the exam's performed_at; `recorded`: recorded_at).
 */
export interface FhirFindingFilter {
  kinds: FindingKind[]
  codes: ObservationSelector[][]
  date: 'effective' | 'recorded'
}
/** A prescription with its exam's practitioner (the prescriber). */
export type FhirPrescriptionRecord = Prescription & { practitioner: string }

/**
 * The FHIR R4 reads and searches (DESIGN.md section 19), by company under row-level security;
 * `centers` null is every center.
 */
export interface ExamFhirStore {
  fhirExam(companyId: number, id: string): Promise<ExamRow | null>
  fhirExams(companyId: number, centers: string[] | null, search: FhirSearch): Promise<FhirRows<ExamRow>>
  fhirFinding(companyId: number, kinds: FindingKind[], id: string): Promise<FhirFindingRecord | null>
  fhirFindings(
    companyId: number,
    centers: string[] | null,
    filter: FhirFindingFilter,
    search: FhirSearch,
  ): Promise<FhirRows<FhirFindingRecord>>
  fhirPrescription(companyId: number, id: string): Promise<FhirPrescriptionRecord | null>
  fhirPrescriptions(
    companyId: number,
    centers: string[] | null,
    search: FhirSearch,
  ): Promise<FhirRows<FhirPrescriptionRecord>>
}
