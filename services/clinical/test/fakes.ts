import {
  NotFound,
  UpstreamUnavailable,
  type Ctx,
  type KeysetAfter,
  type Principal,
} from '@clinic/platform/core'
import { FakeTenantStore, testCtx, testPrincipal } from '@clinic/platform/testing'
import pino from 'pino'

import type { AppointmentDirectory, PatientDirectory } from '../src/domain/directories'
import type {
  ExamFilter,
  ExamStore,
  ExamTx,
  FindingRecord,
  HistoryRecord,
  TrendFilter,
} from '../src/domain/exam-store'
import type { ExamRow, HistoryEntry, Measurement, Prescription } from '../src/schemas/exam'

/** A finding as the repository keeps it: the record plus the trend's columns (set at signing). */
type StoredFinding = FindingRecord & {
  patient_id: string
  codalmacen: string
  superseded_in: number | null
  signed: boolean
  performed_at: string | null
  taken_at: string | null
}

interface Side {
  findings: StoredFinding[]
  history: Array<HistoryEntry & { exam_id: string }>
  prescriptions: Prescription[]
}

/**
 * The clinical store in memory, for unit tests of the use cases (STYLE 9: a fake with real
 * behaviour, not a mock): the platform's FakeTenantStore (exam rows, transactions that keep nothing
 * when they throw, Idempotency-Keys, the outbox) plus the findings, history and prescriptions of
 * each company, kept or rolled back with the transaction. Time is the injected `clock`.
 */
export class FakeExamStore extends FakeTenantStore<ExamTx, ExamRow> implements ExamStore {
  readonly side = new Map<number, Side>()

  constructor(readonly clock: () => Date = () => new Date('2026-11-20T10:00:00.000Z')) {
    super((scope) => {
      const side = this.sideOf(scope.companyId)
      const now = () => this.clock().toISOString()
      const write = (id: string, values: Partial<ExamRow>) => {
        const row = scope.get(id)
        if (!row) throw new NotFound('No such exam')
        return scope.put({ ...row, ...values, version: row.version + 1, updated_at: now() })
      }
      return {
        findById: async (id) => scope.get(id),
        insert: async (id, fields) =>
          scope.put({
            id,
            ...fields,
            status: 'draft',
            signed_at: null,
            signed_by: null,
            amendments: 0,
            created_at: now(),
            updated_at: now(),
            version: 1,
          }),
        update: async (id, values) => write(id, values),
        touch: async (id, extra) => write(id, extra ?? {}),
        findings: async (examId) => structuredClone(side.findings.filter((f) => f.exam_id === examId)),
        prescriptions: async (examId) =>
          structuredClone(side.prescriptions.filter((p) => p.exam_id === examId)),
        insertFinding: async (exam, f, recordedBy) => {
          const stored: StoredFinding = {
            id: f.id,
            exam_id: exam.id,
            kind: f.kind,
            eye: f.eye,
            data: structuredClone(f.data),
            state: 'live',
            recorded_at: now(),
            recorded_by: recordedBy,
            added_in: f.addedIn,
            patient_id: exam.patient_id,
            codalmacen: exam.codalmacen,
            superseded_in: null,
            signed: false,
            performed_at: null,
            taken_at: null,
          }
          side.findings.push(stored)
          return structuredClone(stored)
        },
        deleteFinding: async (examId, kind, findingId) => {
          const i = side.findings.findIndex(
            (f) => f.exam_id === examId && f.kind === kind && f.id === findingId,
          )
          if (i < 0) return false
          side.findings.splice(i, 1)
          return true
        },
        supersede: async (examId, ids, version) => {
          const marked: string[] = []
          for (const f of side.findings)
            if (f.exam_id === examId && f.state === 'live' && ids.includes(f.id)) {
              f.state = 'superseded'
              f.superseded_in = version
              marked.push(f.id)
            }
          return marked
        },
        markSigned: async (exam) => {
          for (const f of side.findings)
            if (f.exam_id === exam.id && !f.signed) {
              f.signed = true
              f.performed_at = exam.performed_at
              f.taken_at = (f.data.measured_at as string | undefined) ?? exam.performed_at
            }
        },
        record: async (examId, h: HistoryRecord) => {
          side.history.push({
            exam_id: examId,
            version: h.version,
            action: h.action,
            at: now(),
            by: { user_id: h.userId, username: h.username },
            reason: h.reason ?? null,
            changes: { fields: h.fields ?? [], added: h.added ?? [], superseded: h.superseded ?? [] },
          })
        },
        insertPrescription: async (p) => {
          const stored: Prescription = { ...structuredClone(p), issued_at: now(), version: 1 }
          side.prescriptions.push(stored)
          return structuredClone(stored)
        },
        publish: async (events) => scope.publish(events),
      }
    })
  }

  /** The side tables roll back with the transaction, as PostgreSQL's would. */
  override async transaction<T>(companyId: number, fn: (tx: ExamTx) => Promise<T>): Promise<T> {
    const before = structuredClone(this.sideOf(companyId))
    try {
      return await super.transaction(companyId, fn)
    } catch (err) {
      this.side.set(companyId, before)
      throw err
    }
  }

  sideOf(companyId: number): Side {
    let s = this.side.get(companyId)
    if (!s) this.side.set(companyId, (s = { findings: [], history: [], prescriptions: [] }))
    return s
  }

  exams(companyId: number): ExamRow[] {
    return [...(this.rows.get(companyId)?.values() ?? [])].map((r) => structuredClone(r))
  }

  async list(companyId: number, f: ExamFilter): Promise<{ rows: ExamRow[]; total: number }> {
    const newestFirst = (a: ExamRow, b: ExamRow) =>
      b.performed_at.localeCompare(a.performed_at) || b.id.localeCompare(a.id)
    const matching = this.exams(companyId)
      .filter(
        (e) =>
          (!f.centers || f.centers.includes(e.codalmacen)) &&
          (f.patientId === undefined || e.patient_id === f.patientId) &&
          (f.practitioner === undefined || e.practitioner === f.practitioner) &&
          (f.status === undefined || e.status === f.status) &&
          (f.from === undefined || e.performed_at >= f.from) &&
          (f.to === undefined || e.performed_at < f.to),
      )
      .sort(newestFirst)
    const after = f.after as KeysetAfter<'performed_at' | 'id'> | undefined
    const rest = after
      ? matching.filter(
          (e) => newestFirst(e, { performed_at: after.performed_at, id: after.id } as ExamRow) > 0,
        )
      : matching.slice(f.offset)
    return { rows: rest.slice(0, f.limit), total: matching.length }
  }

  async contents(companyId: number, examIds: string[]) {
    const side = this.sideOf(companyId)
    const findings: FindingRecord[] = side.findings
      .filter((f) => examIds.includes(f.exam_id))
      .map((f) => ({
        id: f.id,
        exam_id: f.exam_id,
        kind: f.kind,
        eye: f.eye,
        data: structuredClone(f.data),
        state: f.state,
        recorded_at: f.recorded_at,
        recorded_by: f.recorded_by,
        added_in: f.added_in,
      }))
    const prescriptions = side.prescriptions.filter((p) => examIds.includes(p.exam_id))
    return structuredClone({ findings, prescriptions })
  }

  async history(companyId: number, examId: string): Promise<HistoryEntry[]> {
    return this.sideOf(companyId)
      .history.filter((h) => h.exam_id === examId)
      .sort((a, b) => a.version - b.version)
      .map(({ exam_id: _, ...h }) => structuredClone(h))
  }

  async prescription(companyId: number, id: string): Promise<Prescription | null> {
    const p = this.sideOf(companyId).prescriptions.find((x) => x.id === id)
    return p ? structuredClone(p) : null
  }

  async trend(companyId: number, f: TrendFilter): Promise<{ rows: Measurement[]; total: number }> {
    const matching = this.sideOf(companyId)
      .findings.filter(
        (m) =>
          m.patient_id === f.patientId &&
          m.kind === f.type &&
          m.state === 'live' &&
          m.signed &&
          (!f.eyes || f.eyes.includes(m.eye)) &&
          (f.kind === undefined || m.data[f.type === 'iop' ? 'method' : 'kind'] === f.kind) &&
          (f.from === undefined || m.taken_at! >= f.from) &&
          (f.to === undefined || m.taken_at! < f.to) &&
          (!f.centers || f.centers.includes(m.codalmacen)),
      )
      .sort((a, b) => a.taken_at!.localeCompare(b.taken_at!) || a.id.localeCompare(b.id))
    return {
      rows: matching.slice(0, f.limit).map((m) => ({
        ...structuredClone(m.data),
        id: m.id,
        exam_id: m.exam_id,
        eye: m.eye,
        performed_at: m.performed_at!,
      })),
      total: matching.length,
    }
  }
}

/**
 * The patients and appointments services as the domain sees them: per company, as the real ones
 * answer (another company's id is unknown); `down` makes every call fail as an unreachable service
 * does (503), and `calls` counts what was asked.
 */
class FakeLookup<T> {
  readonly entries = new Map<string, T>()
  calls = 0
  down = false
  set(companyId: number, id: string, value: T): string {
    this.entries.set(`${companyId}:${id}`, value)
    return id
  }
  protected lookup(ctx: Ctx, id: string): T | null {
    this.calls++
    if (this.down) throw new UpstreamUnavailable()
    return this.entries.get(`${ctx.auth.companyId}:${id}`) ?? null
  }
}

/** A patient's home center (null: none) by company and id. */
export class FakePatients extends FakeLookup<{ codalmacen: string | null }> implements PatientDirectory {
  add(companyId: number, home: string | null = 'ALM1', id = fakeId()): string {
    return this.set(companyId, id, { codalmacen: home })
  }
  async find(ctx: Ctx, id: string) {
    return this.lookup(ctx, id)
  }
}

/** An appointment's patient by company and id. */
export class FakeAppointments extends FakeLookup<{ patient_id: string }> implements AppointmentDirectory {
  add(companyId: number, patientId: string, id = fakeId()): string {
    return this.set(companyId, id, { patient_id: patientId })
  }
  async find(ctx: Ctx, id: string) {
    return this.lookup(ctx, id)
  }
}

/** A use case's context for a principal (a fresh company unless told). */
export const ctxOf = (overrides: Partial<Principal> = {}): Ctx => testCtx(testPrincipal(overrides))

/** The same, with what it logs kept in `lines` (each line as pino writes it, parsed). */
export function loggingCtxOf(overrides: Partial<Principal> = {}): {
  ctx: Ctx
  lines: Array<Record<string, unknown>>
} {
  const lines: Array<Record<string, unknown>> = []
  const log = pino({ level: 'info' }, { write: (s: string) => void lines.push(JSON.parse(s)) })
  return { ctx: { ...ctxOf(overrides), log }, lines }
}

/** The AppError code a use case ends with ('ok' when it does not throw). */
export const codeOf = (work: Promise<unknown>): Promise<string> =>
  work.then(
    () => 'ok',
    (err: { code?: string }) => err.code ?? String(err),
  )

/** The problem a use case ends with: its code and detail (what the client reads). */
export const problemOf = (work: Promise<unknown>): Promise<unknown> =>
  work.then(
    () => 'ok',
    (err: { code?: string; detail?: string }) => ({ code: err.code, detail: err.detail }),
  )

/** The field errors of a 400 validation_failed a use case throws. */
export const fieldErrorsOf = (work: Promise<unknown>): Promise<unknown> =>
  work.then(
    () => 'ok',
    (err: { code?: string; errors?: unknown }) => (err.code === 'validation_failed' ? err.errors : err),
  )

let n = 0
/** Obviously fake, unique uuids (v7 shape). */
export const fakeId = (): string => `019ab2c4-1f00-7000-8000-${(++n).toString(16).padStart(12, '0')}`
