import { isUuid, type FhirSearch, type ReferenceValue } from '@clinic/platform/core'
import { companyRead, fhirSearchPage, isoInstant, whereDateBounds } from '@clinic/platform/db'
import type { Knex } from 'knex'
import type {
  ExamFhirStore,
  FhirFindingRecord,
  FhirFindingFilter,
  FhirPrescriptionRecord,
} from '../../domain/exam-store'
import type { FindingKind } from '../../domain/finding-rules'
import type { ExamRow } from '../../schemas/exam'
import {
  EXAM_COLUMNS,
  FINDING_COLUMNS,
  PRESCRIPTION_COLUMNS,
  toExam,
  toFinding,
  toPrescription,
  type Row,
} from './exams-repository'

/** What a finding's resource reads of its exam (besides its id and updated_at). */
const EXAM_PART = [
  'patient_id',
  'codalmacen',
  'practitioner',
  'performed_at',
  'status',
  'version',
  'amendments',
]
/** A finding joined to its exam (`f`, `e`): the finding's columns, the exam's as `exam_<column>`. */
const FHIR_FINDING_COLUMNS = [
  ...FINDING_COLUMNS.map((c) => `f.${c}`),
  ...EXAM_PART.map((c) => `e.${c} as exam_${c}`),
  'e.updated_at',
]
/** A prescription (`rx`) with its exam's practitioner. */
const FHIR_PRESCRIPTION_COLUMNS = [...PRESCRIPTION_COLUMNS.map((c) => `rx.${c}`), 'e.practitioner']

const only = (row: Row, columns: readonly string[]): Row =>
  Object.fromEntries(columns.map((c) => [c, row[c]]))

function toFhirFinding(row: Row): FhirFindingRecord {
  const exam: Row = { id: row.exam_id, updated_at: isoInstant(row.updated_at) }
  for (const c of EXAM_PART) exam[c] = row[`exam_${c}`]
  exam.performed_at = isoInstant(exam.performed_at)
  return { ...toFinding(only(row, FINDING_COLUMNS)), exam } as unknown as FhirFindingRecord
}
const toFhirPrescription = (row: Row): FhirPrescriptionRecord => ({
  ...toPrescription(only(row, PRESCRIPTION_COLUMNS)),
  practitioner: row.practitioner as string,
})
/** The ids of a reference parameter's alternatives (an id that is no uuid matches nothing). */
const refIds = (alternatives: ReferenceValue[]) => alternatives.map((r) => r.id).filter(isUuid)
/** An Observation's effectiveDateTime: IOP's measured_at, else the exam's performed_at. */
const EFFECTIVE = `coalesce((f.data->>'measured_at')::timestamptz, e.performed_at)`

/**
 * The FHIR R4 reads and searches of the clinical record (DESIGN.md section 19;
 * domain/fhir-resources.ts): each one statement under the company's row-level security, the page
 * and its total by fhirSearchPage (`_id`, `_lastUpdated`, order, cursor).
 */
export class ClinicalFhirRepository implements ExamFhirStore {
  constructor(private readonly knex: Knex) {}

  async fhirExam(companyId: number, id: string): Promise<ExamRow | null> {
    const [row] = await companyRead<Row>(
      this.knex,
      companyId,
      this.knex('exams').where({ idempresa: companyId, id }).select(EXAM_COLUMNS),
    )
    return row ? toExam(row) : null
  }

  /** Encounter: `patient`, `date` on performed_at; paged by the exam's updated_at. */
  async fhirExams(companyId: number, centers: string[] | null, s: FhirSearch) {
    const matching = this.knex('exams').where('idempresa', companyId)
    if (centers) matching.whereIn('codalmacen', centers)
    for (const alts of s.references('patient')) matching.whereIn('patient_id', refIds(alts))
    whereDateBounds(matching, 'performed_at', s.dates('date'))
    const page = await fhirSearchPage<Row>(this.knex, companyId, matching, EXAM_COLUMNS, s, {
      updatedAt: 'updated_at',
      idKind: 'uuid',
    })
    return { ...page, rows: page.rows.map(toExam) }
  }

  /** The company's findings of these kinds, each joined to its exam. */
  private findingsWithExams(companyId: number, kinds: FindingKind[]) {
    return this.knex('findings as f')
      .join('exams as e', (j) => j.on('e.idempresa', 'f.idempresa').andOn('e.id', 'f.exam_id'))
      .where('f.idempresa', companyId)
      .whereIn('f.kind', kinds)
  }

  async fhirFinding(companyId: number, kinds: FindingKind[], id: string) {
    const [row] = await companyRead<Row>(
      this.knex,
      companyId,
      this.findingsWithExams(companyId, kinds).where('f.id', id).select(FHIR_FINDING_COLUMNS),
    )
    return row ? toFhirFinding(row) : null
  }

  /**
   * Observation and Condition: `patient` (the exam's), `date` (Observation: effectiveDateTime;
   * Condition: recorded_at), `code` and `encounter`; superseded findings included. Paged by the
   * exam's updated_at (the resources' lastUpdated), then the finding's id.
   */
  async fhirFindings(companyId: number, centers: string[] | null, filter: FhirFindingFilter, s: FhirSearch) {
    const matching = this.findingsWithExams(companyId, filter.kinds)
    if (centers) matching.whereIn('e.codalmacen', centers)
    for (const alts of s.references('patient')) matching.whereIn('e.patient_id', refIds(alts))
    for (const alts of s.references('encounter')) matching.whereIn('f.exam_id', refIds(alts))
    for (const alts of filter.codes)
      matching.where((q) => {
        if (!alts.length) q.whereRaw('false')
        for (const c of alts)
          q.orWhere((one) => {
            one.where('f.kind', c.kind)
            if (c.acuityKind !== undefined) one.whereRaw(`f.data->>'kind' = ?`, [c.acuityKind])
          })
      })
    whereDateBounds(matching, filter.date === 'effective' ? EFFECTIVE : 'f.recorded_at', s.dates('date'))
    const page = await fhirSearchPage<Row>(this.knex, companyId, matching, FHIR_FINDING_COLUMNS, s, {
      updatedAt: 'e.updated_at',
      idKind: 'uuid',
      id: 'f.id',
    })
    return { ...page, rows: page.rows.map(toFhirFinding) }
  }

  /** The company's prescriptions, each with its exam's practitioner. */
  private prescriptionsWithExams(companyId: number) {
    return this.knex('prescriptions as rx')
      .join('exams as e', (j) => j.on('e.idempresa', 'rx.idempresa').andOn('e.id', 'rx.exam_id'))
      .where('rx.idempresa', companyId)
  }

  async fhirPrescription(companyId: number, id: string) {
    const [row] = await companyRead<Row>(
      this.knex,
      companyId,
      this.prescriptionsWithExams(companyId).where('rx.id', id).select(FHIR_PRESCRIPTION_COLUMNS),
    )
    return row ? toFhirPrescription(row) : null
  }

  /** VisionPrescription: `patient`; paged by issued_at (a prescription never changes). */
  async fhirPrescriptions(companyId: number, centers: string[] | null, s: FhirSearch) {
    const matching = this.prescriptionsWithExams(companyId)
    if (centers) matching.whereIn('rx.codalmacen', centers)
    for (const alts of s.references('patient')) matching.whereIn('rx.patient_id', refIds(alts))
    const page = await fhirSearchPage<Row>(this.knex, companyId, matching, FHIR_PRESCRIPTION_COLUMNS, s, {
      updatedAt: 'rx.issued_at',
      idKind: 'uuid',
      id: 'rx.id',
    })
    return { ...page, rows: page.rows.map(toFhirPrescription) }
  }
}
