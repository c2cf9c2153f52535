import { findVisible } from '@clinic/platform/core'
import { IdParams, problem } from '@clinic/platform/http'
import { Type, type FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { ExamStore } from '../domain/exam-store'
import { NOT_FOUND } from '../domain/read-exam'
import { Exam } from '../schemas/exam'

/** What another service learns of an exam: whose it is and where, never its findings or notes. */
export const ExamSummary = Type.Pick(Exam, ['id', 'patient_id', 'codalmacen', 'status'], {
  title: 'ExamSummary',
})

/** The services that may resolve an exam of their caller (services.json `calls`). */
const LOOKUP_CALLERS = ['documents'] as const

/**
 * For other services (documents checks that a document's or a consent's `exam_id` is an exam of
 * that patient), never routed by the gateway: called with the calling service's own assertion for
 * its caller, so the caller's company and centers apply exactly as on `GET /clinical/exams/:id`
 * (another company's exam, an unknown id and a hidden center are all 404).
 */
export const internalRoutes: FastifyPluginAsyncTypebox<{ store: ExamStore }> = async (app, { store }) => {
  app.get(
    '/internal/clinical/exams/:id',
    {
      config: { callers: LOOKUP_CALLERS },
      schema: {
        hide: true,
        tags: ['internal'],
        operationId: 'internalGetExamSummary',
        summary: 'Resolve an exam of the caller (service to service)',
        params: IdParams,
        response: { 200: ExamSummary, 404: problem('not_found') },
      },
    },
    async (req) => findVisible(req.ctx, store, req.params.id.toLowerCase(), { notFound: NOT_FOUND }),
  )
}
