import { type Ctx } from '@clinic/platform/core'
import type { Exam, ExamRow, Prescription } from '../schemas/exam'
import type { Finding } from '../schemas/findings'
import type { ExamStore, FindingRecord } from './exam-store'
import type { FindingVersions } from './fhir'
import { FINDING_KINDS, type FindingKind } from './finding-rules'

/** A finding as the API shows it: its common fields and its kind's own. */
export const findingOf = (f: FindingRecord): Finding =>
  ({
    ...f.data,
    id: f.id,
    eye: f.eye,
    state: f.state,
    recorded_at: f.recorded_at,
    recorded_by: f.recorded_by,
  }) as Finding

/** The exam with its findings by kind and its prescriptions inline. */
export function assemble(row: ExamRow, findings: FindingRecord[], prescriptions: Prescription[]): Exam {
  const byKind = Object.fromEntries(FINDING_KINDS.map((k) => [k, [] as Finding[]])) as Record<
    FindingKind,
    Finding[]
  >
  for (const f of findings) if (f.exam_id === row.id) byKind[f.kind].push(findingOf(f))
  return {
    ...row,
    ...(byKind as unknown as Pick<Exam, FindingKind>),
    prescriptions: prescriptions.filter((p) => p.exam_id === row.id),
  }
}

/** Exams as the API shows them, their findings and prescriptions read in one go. */
export async function withContents(ctx: Ctx, store: ExamStore, rows: ExamRow[]): Promise<Exam[]> {
  return (await withVersions(ctx, store, rows)).exams
}

/** The same, with the exam version that added each finding (what the FHIR statuses need). */
export async function withVersions(
  ctx: Ctx,
  store: ExamStore,
  rows: ExamRow[],
): Promise<{ exams: Exam[]; versions: FindingVersions }> {
  const { findings, prescriptions } = await store.contents(
    ctx.auth.companyId,
    rows.map((r) => r.id),
  )
  return {
    exams: rows.map((r) => assemble(r, findings, prescriptions)),
    versions: { addedIn: Object.fromEntries(findings.map((f) => [f.id, f.added_in])) },
  }
}
