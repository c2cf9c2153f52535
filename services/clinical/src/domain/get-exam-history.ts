import { NotFound, visibleCenters, visibleRow, type Ctx } from '@clinic/platform/core'
import type { HistoryEntry } from '../schemas/exam'
import type { ExamStore } from './exam-store'

import { NOT_FOUND } from './exam-rules'

/** Every version of the exam, oldest first: who, when, why (amendments) and what changed. */
export async function getExamHistory(
  ctx: Ctx,
  store: ExamStore,
  input: { id: string; queryCenter: string | undefined },
): Promise<{ data: HistoryEntry[] }> {
  const visible = visibleCenters(ctx.auth, input.queryCenter)
  const exam = await store.findById(ctx.auth.companyId, input.id)
  if (!exam) throw new NotFound(NOT_FOUND)
  visibleRow(visible, exam, NOT_FOUND)
  return { data: await store.history(ctx.auth.companyId, exam.id) }
}
