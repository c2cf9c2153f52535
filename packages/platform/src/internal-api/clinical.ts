import { Type, type Static } from '@sinclair/typebox'
import { IdParams, Uuid } from '../schemas'
import { internalEndpoints, lookup } from './define'

/** What another service learns of an exam: whose it is and where, never its findings or notes. */
export const ExamSummary = Type.Object(
  { id: Uuid, patient_id: Uuid, codalmacen: Type.String(), status: Type.String() },
  { title: 'ExamSummary' },
)
export type ExamSummary = Static<typeof ExamSummary>

/**
 * The clinical service's internal endpoints: the caller's company and centers apply exactly as on
 * `GET /clinical/exams/:id` (another company's exam, an unknown id and a hidden center are all 404).
 */
export default internalEndpoints('clinical', {
  lookUpExam: lookup({
    path: '/internal/clinical/exams/:id',
    operationId: 'internalGetExamSummary',
    summary: 'Resolve an exam of the caller (service to service)',
    params: IdParams,
    answer: ExamSummary,
  }),
})
