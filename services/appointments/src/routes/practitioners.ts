import {
  CenterQuery,
  ETagHeader,
  PatchHeaders,
  PostHeaders,
  listOf,
  problem,
  requestHash,
  sendResource,
  type RequestErrorOptions,
} from '@clinic/platform'
import { Type, type FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { PractitionerStore } from '../domain/practitioner-store'
import { practitionerFieldErrors, timeOffFieldErrors } from '../domain/practitioner-rules'
import {
  createPractitioner,
  getPractitioner,
  listPractitioners,
  updatePractitioner,
} from '../domain/practitioners'
import { addTimeOff, deleteTimeOff, listTimeOff } from '../domain/time-off'
import { READ_ONLY_FIELDS, TEXT_MESSAGES } from '../schemas/appointment'
import {
  CreatePractitionerBody,
  CreateTimeOffBody,
  ListPractitionersQuery,
  ListTimeOffQuery,
  Practitioner,
  PractitionerParams,
  TimeOff,
  TimeOffParams,
  UpdatePractitionerBody,
} from '../schemas/practitioner'

const tags = ['practitioners']
const QUERY_RULES: RequestErrorOptions = { patternMessages: TEXT_MESSAGES }
const PRACTITIONER_RULES: RequestErrorOptions = {
  extra: practitionerFieldErrors,
  patternMessages: TEXT_MESSAGES,
  readOnlyFields: READ_ONLY_FIELDS,
}
const PATCH_RULES: RequestErrorOptions = {
  ...PRACTITIONER_RULES,
  refusedFields: { '/id': 'cannot be changed: register another practitioner' },
}
const TIME_OFF_RULES: RequestErrorOptions = { extra: timeOffFieldErrors, patternMessages: TEXT_MESSAGES }
const WITH_ETAG = { ...Practitioner, headers: ETagHeader }

const createRoute = {
  config: { rules: PRACTITIONER_RULES },
  schema: {
    tags,
    operationId: 'createPractitioner',
    summary: 'Register a practitioner with working hours',
    description:
      '`id` is the slug appointments name in `practitioner`. Working hours are local times in `time_zone`, per weekday and center; entries of one weekday may not overlap. Bookings of a registered practitioner are checked against them (422 outside_working_hours). A token limited to centers may only name its centers. The same id again is 409 duplicate_practitioner.',
    querystring: CenterQuery,
    headers: PostHeaders,
    body: CreatePractitionerBody,
    response: {
      201: { ...Practitioner, headers: { ...ETagHeader, location: Type.String() } },
      409: problem('duplicate_practitioner or idempotency_conflict'),
    },
  },
}
const listRoute = {
  config: { rules: QUERY_RULES },
  schema: {
    tags,
    operationId: 'listPractitioners',
    summary: 'List practitioners',
    description:
      'By id. `codalmacen` (or a token limited to centers): those who work at that center. `meta.next` is a cursor for `?after=`.',
    querystring: ListPractitionersQuery,
    response: { 200: listOf(Practitioner, 'PractitionerList') },
  },
}
const getRoute = {
  config: { rules: QUERY_RULES },
  schema: {
    tags,
    operationId: 'getPractitioner',
    summary: 'Read one practitioner',
    description:
      '`ETag` is the version. A token limited to centers sees those who work at one of its centers.',
    params: PractitionerParams,
    querystring: CenterQuery,
    response: { 200: WITH_ETAG },
  },
}
const updateRoute = {
  config: { rules: PATCH_RULES },
  schema: {
    tags,
    operationId: 'updatePractitioner',
    summary: 'Change name, time zone, slot length, working hours or active',
    description:
      'Only the fields sent change; `working_hours` is replaced as a whole. Existing appointments stay. `If-Match` with a stale version is 412.',
    params: PractitionerParams,
    querystring: CenterQuery,
    headers: PatchHeaders,
    body: UpdatePractitionerBody,
    response: { 200: WITH_ETAG, 412: problem('version_mismatch') },
  },
}
const addTimeOffRoute = {
  config: { rules: TIME_OFF_RULES },
  schema: {
    tags,
    operationId: 'createTimeOff',
    summary: 'Add time off',
    description:
      'No bookings (422 outside_working_hours unless `outside_hours`) and no availability in it. Appointments already booked stay.',
    params: PractitionerParams,
    querystring: CenterQuery,
    headers: PostHeaders,
    body: CreateTimeOffBody,
    response: {
      201: { ...TimeOff, headers: { location: Type.String() } },
      409: problem('idempotency_conflict'),
    },
  },
}
const listTimeOffRoute = {
  config: { rules: QUERY_RULES },
  schema: {
    tags,
    operationId: 'listTimeOff',
    summary: "List a practitioner's time off",
    description: 'Earliest first; `from`/`to` keep the time off that meets that range.',
    params: PractitionerParams,
    querystring: ListTimeOffQuery,
    response: { 200: listOf(TimeOff, 'TimeOffList') },
  },
}
const deleteTimeOffRoute = {
  config: { rules: QUERY_RULES },
  schema: {
    tags,
    operationId: 'deleteTimeOff',
    summary: 'Remove time off',
    params: TimeOffParams,
    querystring: CenterQuery,
    response: { 204: Type.Null({ description: 'Removed' }) },
  },
}

/** The practitioner routes (DESIGN.md section 11); each handler calls one use case. */
export const practitionerRoutes: FastifyPluginAsyncTypebox<{ store: PractitionerStore }> = async (
  app,
  { store },
) => {
  app.post('/practitioners', createRoute, async (req, reply) => {
    const result = await createPractitioner(req.ctx, store, {
      body: req.body,
      idempotencyKey: req.headers['idempotency-key'],
      requestHash: requestHash(req.method, req.url, req.body),
    })
    return sendResource(reply, result, { status: 201, location: `/practitioners/${result.body.id}` })
  })

  app.get('/practitioners', listRoute, async (req) => listPractitioners(req.ctx, store, req.query))

  app.get('/practitioners/:id', getRoute, async (req, reply) =>
    sendResource(reply, {
      body: await getPractitioner(req.ctx, store, { id: req.params.id, queryCenter: req.query.codalmacen }),
    }),
  )

  app.patch('/practitioners/:id', updateRoute, async (req, reply) => {
    const practitioner = await updatePractitioner(req.ctx, store, {
      id: req.params.id,
      patch: req.body,
      queryCenter: req.query.codalmacen,
      ifMatch: req.headers['if-match'],
    })
    return sendResource(reply, { body: practitioner })
  })

  app.post('/practitioners/:id/time-off', addTimeOffRoute, async (req, reply) => {
    const result = await addTimeOff(req.ctx, store, {
      practitioner: req.params.id,
      body: req.body,
      queryCenter: req.query.codalmacen,
      idempotencyKey: req.headers['idempotency-key'],
      requestHash: requestHash(req.method, req.url, req.body),
    })
    const location = `/practitioners/${req.params.id}/time-off/${result.body.id}`
    return sendResource(reply, result, { status: 201, location })
  })

  app.get('/practitioners/:id/time-off', listTimeOffRoute, async (req) =>
    listTimeOff(req.ctx, store, { ...req.query, practitioner: req.params.id }),
  )

  app.delete('/practitioners/:id/time-off/:time_off_id', deleteTimeOffRoute, async (req, reply) => {
    await deleteTimeOff(req.ctx, store, {
      practitioner: req.params.id,
      id: req.params.time_off_id,
      queryCenter: req.query.codalmacen,
    })
    return reply.code(204).send(null)
  })
}
