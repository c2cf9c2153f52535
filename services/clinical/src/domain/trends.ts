import { visibleCenters, type Ctx } from '@clinic/platform/core'
import type { Measurement, TrendInput } from '../schemas/exam'
import type { ExamStore } from './exam-store'
import { rangeOf } from './list-exams'

/**
 * A patient's measurements across signed exams, oldest first: only live findings (an amendment's
 * superseded values are history, not data). `eye=right` is that eye; acuity's `both` is binocular.
 * `kind` is the acuity kind, or for IOP the method (tonometers do not read alike).
 */
export async function patientMeasurements(
  ctx: Ctx,
  store: ExamStore,
  input: { patientId: string; query: TrendInput },
): Promise<{ data: Measurement[]; meta: { total: number; limit: number } }> {
  const q = input.query
  const limit = q.limit ?? 500
  const { rows, total } = await store.trend(ctx.auth.companyId, {
    patientId: input.patientId.toLowerCase(),
    type: q.type,
    eyes: q.eye ? [q.eye] : null,
    kind: q.kind,
    ...rangeOf(q),
    centers: visibleCenters(ctx.auth, q.codalmacen),
    limit,
  })
  return { data: rows, meta: { total, limit } }
}
