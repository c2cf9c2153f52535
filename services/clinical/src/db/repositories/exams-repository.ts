import { NotFound } from '@clinic/platform/core'
import {
  TenantRepository,
  companyPage,
  companyRead,
  companyTransaction,
  isoInstant,
  keysetPageParts,
} from '@clinic/platform/db'
import { enqueueEvents } from '@clinic/platform/events'
import type { Knex } from 'knex'
import type {
  ExamFilter,
  ExamStore,
  ExamTx,
  FindingRecord,
  HistoryRecord,
  TrendFilter,
} from '../../domain/exam-store'
import { EXAM_KEYSET } from '../../domain/list-exams'
import type { ExamFields, ExamRow, HistoryEntry, Measurement, Prescription } from '../../schemas/exam'

export const EXAM_COLUMNS = [
  'id',
  'patient_id',
  'codalmacen',
  'practitioner',
  'appointment_id',
  'performed_at',
  'kind',
  'chief_complaint',
  'notes',
  'status',
  'signed_at',
  'signed_by',
  'amendments',
  'created_at',
  'updated_at',
  'version',
] as const satisfies ReadonlyArray<keyof ExamRow>
const EXAM_INSTANTS = ['performed_at', 'signed_at', 'created_at', 'updated_at'] as const
// prettier-ignore
export const FINDING_COLUMNS = ['id', 'exam_id', 'kind', 'eye', 'data', 'state', 'recorded_at', 'recorded_by', 'added_in']
export const PRESCRIPTION_COLUMNS = [
  'id',
  'exam_id',
  'patient_id',
  'codalmacen',
  'type',
  'lenses',
  'valid_until',
  'notes',
  'issued_at',
  'issued_by',
  'version',
]

export type Row = Record<string, unknown>

export function toExam(row: Row): ExamRow {
  const out: Row = {}
  for (const c of EXAM_COLUMNS) out[c] = row[c]
  for (const c of EXAM_INSTANTS) out[c] = isoInstant(row[c])
  return out as unknown as ExamRow
}
export const toFinding = (row: Row): FindingRecord =>
  ({ ...row, recorded_at: isoInstant(row.recorded_at) }) as unknown as FindingRecord
export const toPrescription = (row: Row): Prescription =>
  ({ ...row, issued_at: isoInstant(row.issued_at) }) as unknown as Prescription

/** What a transaction does with an exam's findings (ExamTx's part). */
function findingsTx(
  trx: Knex.Transaction,
  companyId: number,
): Pick<ExamTx, 'findings' | 'insertFinding' | 'deleteFinding' | 'supersede' | 'markSigned'> {
  const findings = () => trx('findings').where('idempresa', companyId)
  return {
    async findings(examId) {
      const rows = await findings()
        .where('exam_id', examId)
        .orderBy(['recorded_at', 'id'])
        .select(FINDING_COLUMNS)
      return (rows as Row[]).map(toFinding)
    },
    async insertFinding(exam, f, recordedBy) {
      const [row] = await trx('findings')
        .insert({
          idempresa: companyId,
          id: f.id,
          exam_id: exam.id,
          kind: f.kind,
          eye: f.eye,
          data: JSON.stringify(f.data),
          added_in: f.addedIn,
          recorded_by: recordedBy,
          patient_id: exam.patient_id,
          codalmacen: exam.codalmacen,
        })
        .returning(FINDING_COLUMNS)
      return toFinding(row as Row)
    },
    async deleteFinding(examId, kind, findingId) {
      return (await findings().where({ exam_id: examId, kind, id: findingId }).delete()) > 0
    },
    async supersede(examId, ids, version) {
      if (!ids.length) return []
      const rows = await findings()
        .where({ exam_id: examId, state: 'live' })
        .whereIn('id', ids)
        .update({ state: 'superseded', superseded_in: version })
        .returning(['id'])
      return (rows as Array<{ id: string }>).map((r) => r.id)
    },
    async markSigned(exam) {
      // The trend's columns, for every finding of the exam not yet marked (at signing: all).
      await findings()
        .where({ exam_id: exam.id, signed: false })
        .update({
          signed: true,
          performed_at: exam.performed_at,
          taken_at: trx.raw(`coalesce((data->>'measured_at')::timestamptz, ?::timestamptz)`, [
            exam.performed_at,
          ]),
        })
    },
  }
}

/**
 * The only code that touches the `clinical` schema. Every statement filters by company and runs
 * in a transaction (or single statement) that sets `app.idempresa` for row-level security.
 */
export class ExamsRepository extends TenantRepository<ExamTx, ExamRow> implements ExamStore {
  constructor(knex: Knex) {
    super(knex, { name: 'exams', columns: EXAM_COLUMNS, toRow: toExam })
  }

  protected tx(companyId: number, trx: Knex.Transaction): ExamTx {
    const exams = () => trx('exams').where('idempresa', companyId)
    const write = async (id: string, values: Row) => {
      const [row] = await exams()
        .where('id', id)
        .update({ ...values, version: trx.raw('version + 1'), updated_at: trx.raw('now()') })
        .returning([...EXAM_COLUMNS])
      if (!row) throw new NotFound('No such exam')
      return toExam(row as Row)
    }
    return {
      findById: (id, opts) => this.rowById(trx, id, opts),
      async insert(id: string, fields: ExamFields) {
        const [row] = await trx('exams')
          .insert({ idempresa: companyId, id, ...fields })
          .returning([...EXAM_COLUMNS])
        return toExam(row as Row)
      },
      update: (id, values) => write(id, values),
      touch: (id, extra) => write(id, extra ?? {}),
      ...findingsTx(trx, companyId),
      async prescriptions(examId) {
        const rows = await trx('prescriptions')
          .where({ idempresa: companyId, exam_id: examId })
          .orderBy(['issued_at', 'id'])
          .select(PRESCRIPTION_COLUMNS)
        return (rows as Row[]).map(toPrescription)
      },
      async record(examId, h: HistoryRecord) {
        await trx('exam_history').insert({
          idempresa: companyId,
          exam_id: examId,
          version: h.version,
          action: h.action,
          user_id: h.userId,
          username: h.username,
          reason: h.reason ?? null,
          fields: h.fields ?? [],
          added: h.added ?? [],
          superseded: h.superseded ?? [],
        })
      },
      async insertPrescription(p) {
        const [row] = await trx('prescriptions')
          .insert({ idempresa: companyId, ...p, lenses: JSON.stringify(p.lenses) })
          .returning(PRESCRIPTION_COLUMNS)
        return toPrescription(row as Row)
      },
      publish: (events) => enqueueEvents(trx, events),
    }
  }

  async list(companyId: number, f: ExamFilter): Promise<{ rows: ExamRow[]; total: number }> {
    const matching = this.knex('exams').where('idempresa', companyId)
    if (f.centers) matching.whereIn('codalmacen', f.centers)
    if (f.patientId) matching.where('patient_id', f.patientId)
    if (f.practitioner !== undefined) matching.where('practitioner', f.practitioner)
    if (f.status) matching.where('status', f.status)
    if (f.from) matching.where('performed_at', '>=', f.from)
    if (f.to) matching.where('performed_at', '<', f.to)
    return this.page(companyId, keysetPageParts(matching, EXAM_COLUMNS, EXAM_KEYSET, f))
  }

  /** Two reads in one transaction (one snapshot): the exams' findings and prescriptions. */
  contents(companyId: number, examIds: string[]) {
    if (!examIds.length) return Promise.resolve({ findings: [], prescriptions: [] })
    return companyTransaction(this.knex, companyId, async (trx) => {
      const [findings, prescriptions] = [
        (await trx('findings')
          .where('idempresa', companyId)
          .whereIn('exam_id', examIds)
          .orderBy(['recorded_at', 'id'])
          .select(FINDING_COLUMNS)) as Row[],
        (await trx('prescriptions')
          .where('idempresa', companyId)
          .whereIn('exam_id', examIds)
          .orderBy(['issued_at', 'id'])
          .select(PRESCRIPTION_COLUMNS)) as Row[],
      ]
      return { findings: findings.map(toFinding), prescriptions: prescriptions.map(toPrescription) }
    })
  }

  async history(companyId: number, examId: string): Promise<HistoryEntry[]> {
    const rows = await companyRead<Row>(
      this.knex,
      companyId,
      this.knex('exam_history')
        .where({ idempresa: companyId, exam_id: examId })
        .orderBy('version')
        .select([
          'version',
          'action',
          'at',
          'user_id',
          'username',
          'reason',
          'fields',
          'added',
          'superseded',
        ]),
    )
    return rows.map((r) => ({
      version: r.version as number,
      action: r.action as HistoryEntry['action'],
      at: isoInstant(r.at) as string,
      by: { user_id: r.user_id as string, username: r.username as string },
      reason: (r.reason as string | null) ?? null,
      changes: {
        fields: r.fields as string[],
        added: r.added as string[],
        superseded: r.superseded as string[],
      },
    }))
  }

  async prescription(companyId: number, id: string): Promise<Prescription | null> {
    const [row] = await companyRead<Row>(
      this.knex,
      companyId,
      this.knex('prescriptions').where({ idempresa: companyId, id }).select(PRESCRIPTION_COLUMNS),
    )
    return row ? toPrescription(row) : null
  }

  /**
   * One statement, one range of `findings_trend` (patient, kind, eye, taken_at): the page and its
   * total under the company's row-level security.
   */
  async trend(companyId: number, f: TrendFilter): Promise<{ rows: Measurement[]; total: number }> {
    const matching = this.knex('findings').where({
      idempresa: companyId,
      patient_id: f.patientId,
      kind: f.type,
      state: 'live',
      signed: true,
    })
    if (f.eyes) matching.whereIn('eye', f.eyes)
    if (f.kind !== undefined)
      matching.whereRaw(`data->>? = ?`, [f.type === 'iop' ? 'method' : 'kind', f.kind])
    if (f.from) matching.where('taken_at', '>=', f.from)
    if (f.to) matching.where('taken_at', '<', f.to)
    if (f.centers) matching.whereIn('codalmacen', f.centers)
    const page = matching.clone().select(['id', 'exam_id', 'eye', 'data', 'performed_at', 'taken_at'])
    page.orderBy([{ column: 'taken_at' }, { column: 'id' }]).limit(f.limit)
    const { rows, total } = await companyPage<Row & { id: unknown }>(this.knex, companyId, {
      page,
      total: matching.clone().count({ n: '*' }),
      orderBy: 'p.taken_at asc, p.id asc',
    })
    return {
      rows: rows.map((r) => ({
        ...(r.data as Record<string, unknown>),
        id: r.id as string,
        exam_id: r.exam_id as string,
        eye: r.eye as string,
        performed_at: isoInstant(r.performed_at) as string,
      })),
      total,
    }
  }
}
