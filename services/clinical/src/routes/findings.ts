import { CenterQuery, IdParams, PostHeaders, problem, requestHash, sendResource } from '@clinic/platform'
import { Type, type FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { ExamStore } from '../domain/exam-store'
import { FINDING_KINDS, FINDING_RULES, KIND_PATHS } from '../domain/finding-rules'
import { addFinding } from '../domain/add-finding'
import { removeFinding } from '../domain/remove-finding'
import { FINDING_BODIES, FINDING_SCHEMAS, FindingParams } from '../schemas/findings'

const tags = ['clinical']
const NAMES = {
  visual_acuity: ['VisualAcuity', 'a visual acuity'],
  iop: ['Iop', 'an intraocular pressure'],
  refraction: ['Refraction', 'a refraction'],
  diagnoses: ['Diagnosis', 'a diagnosis'],
} as const

const DESCRIPTIONS = {
  visual_acuity:
    '`value` exactly as entered in its `notation`; the answer adds `logmar` (Snellen -log10(num/den), decimal -log10(d), letters (85 - L) × 0.02, CF 1.98, HM 2.28, LP/NLP null, rounded to 0.01). A value that does not read in its notation is 400 naming `/value`.',
  iop: '`mmhg` 0-80 with one decimal at most, the `method` and when it was measured (`measured_at`).',
  refraction:
    'Dioptres in steps of 0.25; `axis` required exactly when `cylinder` is not 0. Stored and answered in minus-cylinder form (a plus cylinder is transposed: sphere + cyl, -cyl, axis ± 90).',
  diagnoses: '`code` in the format of its `system`: ICD-10 `H40.11`, SNOMED CT a concept id.',
} as const

/** One POST and one DELETE per kind of finding, while the exam is a draft. */
export const findingRoutes: FastifyPluginAsyncTypebox<{ store: ExamStore }> = async (app, { store }) => {
  for (const kind of FINDING_KINDS) {
    const [name, what] = NAMES[kind]
    const path = `/clinical/exams/:id/${KIND_PATHS[kind]}`
    app.post(
      path,
      {
        config: { rules: { extra: (body) => FINDING_RULES[kind](body) } },
        schema: {
          tags,
          operationId: `addClinical${name}`,
          summary: `Add ${what} to a draft exam`,
          description: `${DESCRIPTIONS[kind]} A signed exam is 409 exam_signed (amend it).`,
          params: IdParams,
          querystring: CenterQuery,
          headers: PostHeaders,
          body: FINDING_BODIES[kind],
          response: {
            201: { ...FINDING_SCHEMAS[kind], headers: { location: Type.String() } },
            409: problem('exam_signed or idempotency_conflict'),
          },
        },
      },
      async (req, reply) => {
        const result = await addFinding(req.ctx, store, {
          examId: req.params.id,
          kind,
          body: req.body as Record<string, unknown>,
          queryCenter: req.query.codalmacen,
          idempotencyKey: req.headers['idempotency-key'],
          requestHash: requestHash(req.method, req.url, req.body),
        })
        return sendResource(reply, result, {
          status: 201,
          location: `/clinical/exams/${req.params.id}/${KIND_PATHS[kind]}/${result.body.id}`,
        })
      },
    )
    app.delete(
      `${path}/:finding_id`,
      {
        schema: {
          tags,
          operationId: `removeClinical${name}`,
          summary: `Remove ${what} from a draft exam`,
          description: 'Only while the exam is a draft: a signed exam is 409 exam_signed (amend it).',
          params: FindingParams,
          querystring: CenterQuery,
          response: { 204: Type.Null({ description: 'removed' }), 409: problem('exam_signed') },
        },
      },
      async (req, reply) => {
        await removeFinding(req.ctx, store, {
          examId: req.params.id,
          kind,
          findingId: req.params.finding_id,
          queryCenter: req.query.codalmacen,
        })
        return reply.code(204).send(null)
      },
    )
  }
}
