import { findVisible, internalApi } from '@clinic/platform/core'
import { serveInternal } from '@clinic/platform/http'
import type { FastifyPluginAsync } from 'fastify'
import type { ExamStore } from '../domain/exam-store'
import { NOT_FOUND } from '../domain/exam-rules'

/**
 * For other services (documents checks that a document's or a consent's `exam_id` is an exam of
 * that patient), never routed by the gateway; packages/platform/src/internal-api/clinical.ts
 * declares it. The caller's company and centers apply exactly as on `GET /clinical/exams/:id`.
 */
export const internalRoutes: FastifyPluginAsync<{ store: ExamStore }> = async (app, { store }) => {
  serveInternal(app, internalApi.clinical.lookUpExam, async (req) =>
    findVisible(req.ctx, store, req.params.id.toLowerCase(), { notFound: NOT_FOUND }),
  )
}
