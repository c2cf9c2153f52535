import {
  CenterQuery,
  ETagHeader,
  IdParams,
  PatchHeaders,
  PostHeaders,
  ListQuery,
  listOf,
  problem,
  requestHash,
  sendResource,
  type RequestErrorOptions,
} from '@clinic/platform'
import { Type, type FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { createPatient } from '../domain/create-patient'
import { getPatient } from '../domain/get-patient'
import { listPatients } from '../domain/list-patients'
import type { PatientStore } from '../domain/patient-store'
import { patientFieldErrors } from '../domain/rules'
import { updatePatient } from '../domain/update-patient'
import {
  CreatePatientBody,
  PATTERN_MESSAGES,
  Patient,
  READ_ONLY_FIELDS,
  SORTS,
  UpdatePatientBody,
} from '../schemas/patient'

const tags = ['patients']
/** Body checks of POST and PATCH: the schema and the rules it cannot express, in one 400. */
const bodyRules: RequestErrorOptions = {
  extra: (body) => patientFieldErrors(body),
  patternMessages: PATTERN_MESSAGES,
  readOnlyFields: READ_ONLY_FIELDS,
}
const ListPatientsQuery = Type.Object(
  {
    ...ListQuery,
    q: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 100,
        description: 'part of the first or last name (any case), or an exact national id',
      }),
    ),
    sort: Type.Optional(
      Type.Union(
        SORTS.map((s) => Type.Literal(s)),
        {
          default: 'last_name',
          description: '`last_name` (then first name) or `-created_at` (newest first)',
        },
      ),
    ),
  },
  { additionalProperties: false },
)
const listPatientsRoute = {
  schema: {
    tags,
    operationId: 'listPatients',
    summary: 'List patients',
    description:
      'Sorted by last name (default) or newest first. `meta.total` is exact; `meta.next` is a cursor for `?after=` (deep paging without offset cost), null on the last page.',
    querystring: ListPatientsQuery,
    response: {
      200: listOf(Patient, 'PatientList'),
    },
  },
}
const createPatientRoute = {
  config: { rules: bodyRules },
  schema: {
    tags,
    operationId: 'createPatient',
    summary: 'Create a patient',
    description:
      'The center is `codalmacen` of the body, else of the query string. Send `Idempotency-Key` to make retries safe.',
    querystring: CenterQuery,
    headers: PostHeaders,
    body: CreatePatientBody,
    response: {
      201: { ...Patient, headers: { ...ETagHeader, location: Type.String() } },
      409: problem('duplicate_national_id or idempotency_conflict'),
      422: problem('guardian_required'),
    },
  },
}
const getPatientRoute = {
  schema: {
    tags,
    operationId: 'getPatient',
    summary: 'Read one patient',
    description: "`ETag` is the version. A patient outside `codalmacen` or the token's centers is 404.",
    params: IdParams,
    querystring: CenterQuery,
    response: { 200: { ...Patient, headers: ETagHeader } },
  },
}
const updatePatientRoute = {
  config: { rules: bodyRules },
  schema: {
    tags,
    operationId: 'updatePatient',
    summary: 'Change some fields of a patient',
    description:
      'Only the fields sent change; null clears a nullable field. `address` and `guardian` are replaced as a whole. Read-only fields (id, version, timestamps, company) are 400. `If-Match` with a stale version is 412.',
    params: IdParams,
    querystring: CenterQuery,
    headers: PatchHeaders,
    body: UpdatePatientBody,
    response: {
      200: { ...Patient, headers: ETagHeader },
      409: problem('duplicate_national_id'),
      412: problem('version_mismatch'),
      422: problem('guardian_required'),
    },
  },
}

/** The routes state their schemas and rules (above); each handler calls one use case. */
export const patientRoutes: FastifyPluginAsyncTypebox<{ store: PatientStore }> = async (app, { store }) => {
  app.get('/patients', listPatientsRoute, async (req) => listPatients(req.ctx, store, req.query))

  app.post('/patients', createPatientRoute, async (req, reply) => {
    const result = await createPatient(req.ctx, store, {
      body: req.body,
      queryCenter: req.query.codalmacen,
      idempotencyKey: req.headers['idempotency-key'],
      requestHash: requestHash(req.method, req.url, req.body),
    })
    return sendResource(reply, result, { status: 201, location: `/patients/${result.body.id}` })
  })

  app.get('/patients/:id', getPatientRoute, async (req, reply) => {
    const patient = await getPatient(req.ctx, store, { id: req.params.id, queryCenter: req.query.codalmacen })
    return sendResource(reply, { body: patient })
  })

  app.patch('/patients/:id', updatePatientRoute, async (req, reply) => {
    const patient = await updatePatient(req.ctx, store, {
      id: req.params.id,
      patch: req.body,
      queryCenter: req.query.codalmacen,
      ifMatch: req.headers['if-match'],
    })
    return sendResource(reply, { body: patient })
  })
}
