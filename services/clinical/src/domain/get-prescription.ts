import { visibleCenters, visibleRow, type Ctx } from '@clinic/platform/core'
import type { Prescription } from '../schemas/exam'
import type { ExamStore } from './exam-store'

/** A prescription of the caller's company, under the same center rules as its exam. */
export async function getPrescription(
  ctx: Ctx,
  store: ExamStore,
  input: { id: string; queryCenter: string | undefined },
): Promise<Prescription> {
  const visible = visibleCenters(ctx.auth, input.queryCenter)
  return visibleRow(visible, await store.prescription(ctx.auth.companyId, input.id), 'No such prescription')
}
