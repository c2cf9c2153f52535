import { NotFound, centerVisible, visibleCenters, type Ctx } from '@clinic/platform/core'
import type { Measurement, TrendInput } from '../schemas/exam'
import type { PatientDirectory } from './directories'
import type { ExamStore } from './exam-store'
import { rangeOf } from './list-exams'

/**
 * A patient's measurements across signed exams, oldest first: only live findings (an amendment's
 * superseded values are history, not data). `eye=right` is that eye; acuity's `both` is binocular.
 * `kind` is the acuity kind, or for IOP the method (tonometers do not read alike).
 *
 * Who may see it (DESIGN 2: a center-limited token sees the patients of its centers; lists filter to
 * its centers): the patient is the gate, the measurements are a list.
 * - The patient must be one the caller may see, as GET /patients/{id} sees it: of this company, for
 *   a center-limited token with a home center among the token's, and with `?codalmacen=` of that
 *   center (a record of another center is 404, as on every read of one record). Else 404, whatever
 *   centers their exams were at (so a patient of a hidden center is not read through a visible one).
 * - The measurements are filtered to the centers the caller may see (and to `?codalmacen=`; a
 *   center the token may not use is 403 center_forbidden): a visible patient's measurements taken
 *   at a hidden center are left out, as the exams list leaves those exams out.
 * A company-wide token asking for no center needs no call to the patients service when
 * measurements come back: they exist only of patients that service confirmed in this company when
 * their exams were opened (the bench measured that call at about a third of a trend's CPU). Any
 * other caller always asks it (the patient's home center may have changed since), alongside the
 * query.
 */
export async function listMeasurements(
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
  const tokenCenters = ctx.auth.allowedCenters
  const gated = Boolean(tokenCenters || q.codalmacen)
  const [{ rows, total }, patient] = await Promise.all([
    deps.store.trend(ctx.auth.companyId, filter),
    gated ? deps.patients.find(ctx, patientId) : undefined,
  ])
  if (gated) {
    const hidden =
      !patient ||
      (tokenCenters && !centerVisible(tokenCenters, patient.codalmacen)) ||
      (q.codalmacen !== undefined && patient.codalmacen !== q.codalmacen)
    if (hidden) throw new NotFound('No such patient')
  } else if (total === 0 && !(await deps.patients.find(ctx, patientId))) throw new NotFound('No such patient')
  return { data: rows, meta: { total, limit } }
}
