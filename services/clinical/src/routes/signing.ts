import {
  CenterQuery,
  ETagHeader,
  IdParams,
  PostHeaders,
  problem,
  requestHash,
  sendResource,
  type FieldError,
} from '@clinic/platform'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { ExamStore } from '../domain/exam-store'
import { FINDING_KINDS, FINDING_RULES } from '../domain/finding-rules'
import { amendExam } from '../domain/amend-exam'
import { getExamHistory } from '../domain/get-exam-history'
import { signExam } from '../domain/sign-exam'
import { Exam, History } from '../schemas/exam'
import { AmendmentBody } from '../schemas/findings'

const tags = ['clinical']

/** Each added finding checked by its kind's rules, at its place in the body. */
function amendmentErrors(body: unknown): FieldError[] {
  const add = (body as { add?: unknown } | null)?.add
  if (!add || typeof add !== 'object') return []
  return FINDING_KINDS.flatMap((kind) => {
    const list = (add as Record<string, unknown>)[kind]
    return Array.isArray(list) ? list.flatMap((f, i) => FINDING_RULES[kind](f, `/add/${kind}/${i}`)) : []
  })
}

/** A sign has nothing to say but "now": no body, or `{}`. */
function emptyBodyErrors(body: unknown): FieldError[] {
  if (body === undefined || body === null) return []
  if (typeof body !== 'object' || Array.isArray(body)) return [{ path: '', message: 'must be empty or {}' }]
  return Object.keys(body).map((k) => ({ path: `/${k}`, message: 'is not an allowed field' }))
}

/** Signing, amendments and the history of an exam. */
export const signingRoutes: FastifyPluginAsyncTypebox<{ store: ExamStore; clock: () => Date }> = async (
  app,
  { store, clock },
) => {
  app.post(
    '/clinical/exams/:id/sign',
    {
      config: { rules: { extra: emptyBodyErrors } },
      schema: {
        tags,
        operationId: 'signClinicalExam',
        summary: 'Sign an exam (final from then on)',
        description:
          'Needs the scope `clinical:sign`, which no token has unless created naming it. The exam becomes `signed` (`signed_at`, `signed_by`); it and its findings never change again: PATCH, a finding’s POST or DELETE answer 409 exam_signed, and corrections are amendments. Signing a signed exam is 409 exam_signed; an exam with no finding at all is 409 exam_empty (a visit without an examination stays a draft). No body needed.',
        params: IdParams,
        querystring: CenterQuery,
        response: { 200: { ...Exam, headers: ETagHeader }, 409: problem('exam_signed or exam_empty') },
      },
    },
    async (req, reply) => {
      const exam = await signExam(req.ctx, store, {
        id: req.params.id,
        queryCenter: req.query.codalmacen,
        now: clock(),
      })
      return sendResource(reply, { body: exam })
    },
  )

  app.post(
    '/clinical/exams/:id/amendments',
    {
      config: { rules: { extra: amendmentErrors } },
      schema: {
        tags,
        operationId: 'amendClinicalExam',
        summary: 'Amend a signed exam',
        description:
          'Needs `clinical:sign`. One new version with its `reason`: `add` findings by kind (`visual_acuity`, `iop`, `refraction`, `diagnoses`, each checked as its POST) and `remove` live findings by id (they stay readable as `superseded`). Concurrent amendments each make their own version. A draft is 400 (change it directly). Send `Idempotency-Key` to make retries safe: a retry answers the first amendment, never makes a second.',
        params: IdParams,
        querystring: CenterQuery,
        headers: PostHeaders,
        body: AmendmentBody,
        response: { 200: { ...Exam, headers: ETagHeader }, 409: problem('idempotency_conflict') },
      },
    },
    async (req, reply) => {
      const result = await amendExam(req.ctx, store, {
        id: req.params.id,
        body: req.body,
        queryCenter: req.query.codalmacen,
        idempotencyKey: req.headers['idempotency-key'],
        requestHash: requestHash(req.method, req.url, req.body),
      })
      return sendResource(reply, result)
    },
  )

  app.get(
    '/clinical/exams/:id/history',
    {
      schema: {
        tags,
        operationId: 'getClinicalExamHistory',
        summary: 'Every version of an exam',
        description:
          'Oldest first: each version with who (`by`), when (`at`), why (`reason`, for amendments) and what changed (field names, findings added and superseded; never values).',
        params: IdParams,
        querystring: CenterQuery,
        response: { 200: History },
      },
    },
    async (req) => getExamHistory(req.ctx, store, { id: req.params.id, queryCenter: req.query.codalmacen }),
  )
}
