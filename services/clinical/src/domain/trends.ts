import { NotFound, centerVisible, visibleCenters, type Ctx } from '@clinic/platform/core'
import type { Measurement, TrendInput } from '../schemas/exam'
import type { PatientDirectory } from './directory'
import type { ExamStore } from './exam-store'
import { rangeOf } from './list-exams'

/**
 * A patient's measurements across signed exams, oldest first: only live findings (an amendment's
 * superseded values are history, not data). `eye=right` is that eye; acuity's `both` is binocular.
 * `kind` is the acuity kind, or for IOP the method (tonometers do not read alike).
 *
 * The patient must be one the caller may see, else 404 (another company's, or of a hidden center,
 * as GET /patients/{id} sees it). Measurements exist only of a patient the patients service
 * confirmed when the exam was opened, in this company: so only an empty answer asks it again
 * (the common read, a patient with measurements, costs no second service call: the bench
 * measured that call at about a third of the trend's CPU).
 */
export async function patientMeasurements(
  ctx: Ctx,
  deps: { store: ExamStore; patients: PatientDirectory },
  input: { patientId: string; query: TrendInput },
): Promise<{ data: Measurement[]; meta: { total: number; limit: number } }> {
  const q = input.query
  const limit = q.limit ?? 500
  const patientId = input.patientId.toLowerCase()
  const filter = {
    patientId,
    type: q.type ?? 'iop',
    eyes: q.eye ? [q.eye] : null,
    kind: q.kind,
    ...rangeOf(q),
    centers: visibleCenters(ctx.auth, q.codalmacen),
    limit,
  }
  const { rows, total } = await deps.store.trend(ctx.auth.companyId, filter)
  if (total === 0) {
    const patient = await deps.patients.find(ctx, patientId)
    // As GET /patients/{id} sees it: a patient of a center the caller may not see is none.
    if (!patient || !centerVisible(filter.centers, patient.codalmacen)) throw new NotFound('No such patient')
  }
  return { data: rows, meta: { total, limit } }
}
