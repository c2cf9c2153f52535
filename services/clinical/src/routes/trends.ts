import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { PatientDirectory } from '../domain/directories'
import type { ExamStore } from '../domain/exam-store'
import { listMeasurements } from '../domain/list-measurements'
import { PatientParams, TrendList, TrendQuery } from '../schemas/exam'

export const trendRoutes: FastifyPluginAsyncTypebox<{
  store: ExamStore
  patients: PatientDirectory
}> = async (app, deps) => {
  app.get(
    '/clinical/patients/:patient_id/measurements',
    {
      schema: {
        tags: ['clinical'],
        operationId: 'listClinicalMeasurements',
        summary: 'A patient’s measurements over time (trends)',
        description:
          'Every live (not superseded) measurement of `type` (`iop`, the default, or `visual_acuity`) across the patient’s signed exams, oldest first, with the finding’s own fields plus `exam_id` and `performed_at`. `eye` filters one eye; `kind` is the acuity kind or the IOP method; `from`/`to` bound the time measured (IOP `measured_at`, acuity the exam’s `performed_at`). At most `limit` (default 500); `meta.total` is exact. A patient the caller may not see (another company’s, a hidden center’s) is 404.',
        params: PatientParams,
        querystring: TrendQuery,
        response: { 200: TrendList },
      },
    },
    async (req) => listMeasurements(req.ctx, deps, { patientId: req.params.patient_id, query: req.query }),
  )
}
