import { findVisible, type Ctx } from '@clinic/platform/core'
import type { Exam } from '../schemas/exam'
import type { ExamStore } from './exam-store'
import type { FindingVersions } from './fhir'

import { NOT_FOUND } from './exam-rules'
import { withVersions } from './exam-contents'

/**
 * An exam of the caller's company visible under `?codalmacen=` and the token's centers, else 404
 * (another company's id, an unknown id and a hidden center look alike).
 */
export async function getExam(
  ctx: Ctx,
  store: ExamStore,
  input: { id: string; queryCenter: string | undefined },
): Promise<Exam> {
  return (await getExamRecord(ctx, store, input)).exam
}

/** The exam as getExam reads it, with its findings' versions (for the FHIR Bundle). */
export async function getExamRecord(
  ctx: Ctx,
  store: ExamStore,
  input: { id: string; queryCenter: string | undefined },
): Promise<{ exam: Exam; versions: FindingVersions }> {
  const row = await findVisible(ctx, store, input.id, { queryCenter: input.queryCenter, notFound: NOT_FOUND })
  const { exams, versions } = await withVersions(ctx, store, [row])
  return { exam: exams[0]!, versions }
}
