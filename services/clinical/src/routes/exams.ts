import {
  CenterQuery,
  ETagHeader,
  IdParams,
  PatchHeaders,
  PostHeaders,
  listOf,
  problem,
  requestHash,
  sendResource,
} from '@clinic/platform'
import { Type, type FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { ExamDeps } from '../domain/exam-rules'
import { createExam } from '../domain/create-exam'
import { updateExam } from '../domain/update-exam'
import { examBundle } from '../domain/fhir-bundle'
import { listExams } from '../domain/list-exams'
import { getExamRecord } from '../domain/get-exam'
import { CreateExamBody, Exam, ListExamsQuery, READ_ONLY_FIELDS, UpdateExamBody } from '../schemas/exam'

const tags = ['clinical']
export const FHIR_JSON = 'application/fhir+json'

const listExamsRoute = {
  schema: {
    tags,
    operationId: 'listClinicalExams',
    summary: 'List exams',
    description:
      'Newest first (`performed_at`). Filters `patient_id`, `practitioner`, `status`, `from`/`to` on `performed_at` (from inclusive, to exclusive). Each exam with its findings and prescriptions inline. `meta.total` is exact; `meta.next` a cursor for `?after=`. A token limited to centers sees only its centers’ exams.',
    querystring: ListExamsQuery,
    response: { 200: listOf(Exam, 'ExamList') },
  },
}

const createExamRoute = {
  config: { rules: { readOnlyFields: READ_ONLY_FIELDS } },
  schema: {
    tags,
    operationId: 'createClinicalExam',
    summary: 'Open an exam (a draft)',
    description:
      'Always `draft`. The center is `codalmacen` of the body, else of the query string, else the patient’s home center. `patient_id` must be a patient of the company (422 unknown_patient); `appointment_id` an appointment of that patient (422 unknown_appointment). If the patients or appointments service cannot answer: 503 with Retry-After, nothing written. Send `Idempotency-Key` to make retries safe.',
    querystring: CenterQuery,
    headers: PostHeaders,
    body: CreateExamBody,
    response: {
      201: { ...Exam, headers: { ...ETagHeader, location: Type.String() } },
      422: problem('unknown_patient or unknown_appointment'),
      503: problem('upstream_unavailable (Retry-After)'),
    },
  },
}

const getExamRoute = {
  schema: {
    tags,
    operationId: 'getClinicalExam',
    summary: 'Read one exam (JSON, or a FHIR R4 Bundle)',
    description:
      '`ETag` is the version. With `Accept: application/fhir+json` the answer is a FHIR R4 `Bundle` (type collection): an Encounter, an Observation per live measurement (acuity SNOMED, IOP LOINC 56844-4 in mm[Hg], refraction SNOMED 251794006 with its components), a Condition per live diagnosis and a VisionPrescription per prescription. An exam outside `codalmacen` or the token’s centers is 404.',
    params: IdParams,
    querystring: CenterQuery,
    response: { 200: { ...Exam, headers: ETagHeader } },
  },
}

const updateExamRoute = {
  config: { rules: { readOnlyFields: READ_ONLY_FIELDS } },
  schema: {
    tags,
    operationId: 'updateClinicalExam',
    summary: 'Change a draft exam',
    description:
      'Only the fields sent change. A signed exam never changes: 409 exam_signed (amend it). `If-Match` with a stale version is 412. A new `appointment_id` must be an appointment of the exam’s patient (422 unknown_appointment).',
    params: IdParams,
    querystring: CenterQuery,
    headers: PatchHeaders,
    body: UpdateExamBody,
    response: {
      200: { ...Exam, headers: ETagHeader },
      409: problem('exam_signed'),
      412: problem('version_mismatch'),
      422: problem('unknown_appointment'),
      503: problem('upstream_unavailable (Retry-After)'),
    },
  },
}

/** Exams: create, list, read (JSON or a FHIR R4 Bundle), PATCH a draft. */
export const examRoutes: FastifyPluginAsyncTypebox<ExamDeps> = async (app, deps) => {
  const { store } = deps

  app.get('/clinical/exams', listExamsRoute, async (req) => listExams(req.ctx, store, req.query))

  app.post('/clinical/exams', createExamRoute, async (req, reply) => {
    const result = await createExam(req.ctx, deps, {
      body: req.body,
      queryCenter: req.query.codalmacen,
      idempotencyKey: req.headers['idempotency-key'],
      requestHash: requestHash(req.method, req.url, req.body),
    })
    return sendResource(reply, result, { status: 201, location: `/clinical/exams/${result.body.id}` })
  })

  app.get('/clinical/exams/:id', getExamRoute, async (req, reply) => {
    const { exam, versions } = await getExamRecord(req.ctx, store, {
      id: req.params.id,
      queryCenter: req.query.codalmacen,
    })
    if (wantsFhir(req.headers.accept)) {
      reply.header('etag', `"${exam.version}"`)
      // A string skips the JSON answer's serializer (which would keep only the Exam's fields).
      return reply
        .type(`${FHIR_JSON}; charset=utf-8`)
        .send(JSON.stringify(examBundle(exam, versions, deps.clock())) as never)
    }
    return sendResource(reply, { body: exam })
  })

  app.patch('/clinical/exams/:id', updateExamRoute, async (req, reply) => {
    const exam = await updateExam(req.ctx, deps, {
      id: req.params.id,
      patch: req.body,
      queryCenter: req.query.codalmacen,
      ifMatch: req.headers['if-match'],
    })
    return sendResource(reply, { body: exam })
  })
}

/** Whether an Accept header asks for FHIR JSON before (or instead of) plain JSON. */
export function wantsFhir(accept: string | undefined): boolean {
  if (!accept) return false
  const types = accept
    .split(',')
    .map((part) => {
      const [type, ...params] = part.trim().toLowerCase().split(';')
      const q = params.map((p) => p.trim()).find((p) => p.startsWith('q='))
      return { type: type!.trim(), q: q ? Number(q.slice(2)) : 1 }
    })
    .filter((t) => t.q > 0)
  const fhir = types.find((t) => t.type === FHIR_JSON)
  if (!fhir) return false
  const json = types.find(
    (t) => t.type === 'application/json' || t.type === '*/*' || t.type === 'application/*',
  )
  return !json || fhir.q >= json.q
}
