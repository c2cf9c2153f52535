import {
  CenterQuery,
  IdParams,
  PostHeaders,
  problem,
  requestHash,
  sendResource,
  type FieldError,
} from '@clinic/platform'
import { Type, type FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { ExamStore } from '../domain/exam-store'
import { refractionErrors } from '../domain/finding-rules'
import { getPrescription } from '../domain/get-prescription'
import { issuePrescription } from '../domain/issue-prescription'
import { CreatePrescriptionBody, Prescription } from '../schemas/exam'

const tags = ['clinical']

/** Each lens as a refraction: quarter dioptres, an axis exactly with a cylinder. */
function lensErrors(body: unknown): FieldError[] {
  const lenses = (body as { lenses?: unknown } | null)?.lenses
  return Array.isArray(lenses) ? lenses.flatMap((l, i) => refractionErrors(l, `/lenses/${i}`)) : []
}

export const prescriptionRoutes: FastifyPluginAsyncTypebox<{ store: ExamStore; clock: () => Date }> = async (
  app,
  { store, clock },
) => {
  app.post(
    '/clinical/exams/:id/prescriptions',
    {
      config: { rules: { extra: lensErrors } },
      schema: {
        tags,
        operationId: 'issueClinicalPrescription',
        summary: 'Issue a prescription from a signed exam',
        description:
          'Signed exams only (409 exam_not_signed). `lenses`: one per eye, the refraction fields (minus-cylinder form, transposed when given in plus), plus for contact lenses `base_curve_mm`, `diameter_mm`, `brand`. `valid_until` defaults to 2 years for spectacles, 1 for contact lenses. Never edited: a new one replaces it.',
        params: IdParams,
        querystring: CenterQuery,
        headers: PostHeaders,
        body: CreatePrescriptionBody,
        response: {
          201: { ...Prescription, headers: { location: Type.String() } },
          409: problem('exam_not_signed or idempotency_conflict'),
        },
      },
    },
    async (req, reply) => {
      const result = await issuePrescription(req.ctx, store, {
        examId: req.params.id,
        body: req.body,
        queryCenter: req.query.codalmacen,
        now: clock(),
        idempotencyKey: req.headers['idempotency-key'],
        requestHash: requestHash(req.method, req.url, req.body),
      })
      return sendResource(reply, result, {
        status: 201,
        location: `/clinical/prescriptions/${result.body.id}`,
      })
    },
  )

  app.get(
    '/clinical/prescriptions/:id',
    {
      schema: {
        tags,
        operationId: 'getClinicalPrescription',
        summary: 'Read one prescription',
        description:
          'Under the same center rules as its exam: outside `codalmacen` or the token’s centers it is 404.',
        params: IdParams,
        querystring: CenterQuery,
        response: { 200: Prescription },
      },
    },
    async (req, reply) =>
      sendResource(reply, {
        body: await getPrescription(req.ctx, store, { id: req.params.id, queryCenter: req.query.codalmacen }),
      }),
  )
}
