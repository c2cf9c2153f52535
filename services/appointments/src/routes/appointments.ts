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
  type FieldError,
  type RequestErrorOptions,
} from '@clinic/platform'
import { Type, type FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { AppointmentStore } from '../domain/appointment-store'
import { bookAppointment } from '../domain/book-appointment'
import { checkInAppointment } from '../domain/check-in-appointment'
import { getAppointment } from '../domain/get-appointment'
import { listAppointments } from '../domain/list-appointments'
import type { PatientDirectory } from '../domain/directories'
import { appointmentFieldErrors } from '../domain/rules'
import { updateAppointment } from '../domain/update-appointment'
import {
  Appointment,
  CreateAppointmentBody,
  ListAppointmentsQuery,
  READ_ONLY_FIELDS,
  TEXT_MESSAGES,
  UpdateAppointmentBody,
} from '../schemas/appointment'
import { SlotConflictProblem } from '../schemas/availability'

const tags = ['appointments']
/** Body checks: schema, the rules it cannot express, and plain words for refused fields. */
const bodyRules = (refusedFields: Record<string, string>): RequestErrorOptions => ({
  extra: appointmentFieldErrors,
  patternMessages: TEXT_MESSAGES,
  readOnlyFields: READ_ONLY_FIELDS,
  refusedFields,
})
const CREATE_RULES = bodyRules({
  '/status': 'cannot be set on create: new appointments are scheduled',
  '/cancellation_reason': 'cannot be set on create',
})
const PATCH_RULES = bodyRules({
  '/patient_id': 'cannot be changed: cancel this appointment and book another',
  '/checked_in_at': 'is read-only: set by POST /appointments/{id}/checkin',
})
/** Query and path checks: plain words for the text patterns. */
const QUERY_RULES: RequestErrorOptions = { patternMessages: TEXT_MESSAGES }

/**
 * A check-in has nothing to say but "now": no body, or `{}`. Any other JSON (an array, a number,
 * `true`, `null`, a string) is refused as a whole (path ""), an object's fields one by one.
 */
function checkInBodyErrors(body: unknown): FieldError[] {
  if (body === undefined) return []
  if (body === null || typeof body !== 'object' || Array.isArray(body))
    return [{ path: '', message: 'must be empty or {}' }]
  return Object.keys(body).map((k) => ({
    path: `/${k.replace(/~/g, '~0').replace(/\//g, '~1')}`,
    message: 'is not an allowed field',
  }))
}

const listAppointmentsRoute = {
  config: { rules: QUERY_RULES },
  schema: {
    tags,
    operationId: 'listAppointments',
    summary: "List appointments (a center's day: codalmacen + from + to)",
    description:
      'Earliest first (default) or `-starts_at`. `from`/`to` bound `starts_at` (from inclusive, to exclusive). `status` repeats for several. `meta.total` is exact; `meta.next` is a cursor for `?after=`, null on the last page. A token limited to centers sees only its centers.',
    querystring: ListAppointmentsQuery,
    response: {
      200: listOf(Appointment, 'AppointmentList'),
    },
  },
}
const bookAppointmentRoute = {
  config: { rules: CREATE_RULES },
  schema: {
    tags,
    operationId: 'createAppointment',
    summary: 'Book an appointment',
    description:
      'Always `scheduled`. The center is `codalmacen` of the body, else of the query string. The practitioner and the patient must be free for the whole time (409 slot_conflict, the detail says which; for a registered practitioner with up to 3 `alternatives`, the next free slots). A registered practitioner must work then (422 outside_working_hours unless `outside_hours: true`). `hold_id` turns that hold into this appointment. `patient_id` must be a patient of the company (422 unknown_patient); if the patients service cannot answer: 503 with Retry-After, nothing written. Send `Idempotency-Key` to make retries safe.',
    querystring: CenterQuery,
    headers: PostHeaders,
    body: CreateAppointmentBody,
    response: {
      201: { ...Appointment, headers: { ...ETagHeader, location: Type.String() } },
      409: SlotConflictProblem,
      422: problem('unknown_patient or outside_working_hours'),
      503: problem('upstream_unavailable (Retry-After)'),
    },
  },
}
const getAppointmentRoute = {
  config: { rules: QUERY_RULES },
  schema: {
    tags,
    operationId: 'getAppointment',
    summary: 'Read one appointment',
    description: "`ETag` is the version. An appointment outside `codalmacen` or the token's centers is 404.",
    params: IdParams,
    querystring: CenterQuery,
    response: {
      200: { ...Appointment, headers: ETagHeader },
    },
  },
}
const updateAppointmentRoute = {
  config: { rules: PATCH_RULES },
  schema: {
    tags,
    operationId: 'updateAppointment',
    summary: 'Move, confirm, cancel or annotate an appointment',
    description:
      'Only the fields sent change. Times, practitioner, center and time zone change only while scheduled or confirmed; completed, cancelled and no-show appointments take only `notes`; `status` follows the state machine (check-in has its own endpoint; cancelling needs `cancellation_reason`): else 409 invalid_transition. Moving onto a taken slot is 409 slot_conflict and changes nothing. `If-Match` with a stale version is 412.',
    params: IdParams,
    querystring: CenterQuery,
    headers: PatchHeaders,
    body: UpdateAppointmentBody,
    response: {
      200: { ...Appointment, headers: ETagHeader },
      409: SlotConflictProblem,
      412: problem('version_mismatch'),
      422: problem('outside_working_hours'),
    },
  },
}
const checkInAppointmentRoute = {
  config: { rules: { ...QUERY_RULES, extra: checkInBodyErrors } },
  schema: {
    tags,
    operationId: 'checkInAppointment',
    summary: 'Check the patient in',
    description:
      'From scheduled or confirmed: status `checked_in` and `checked_in_at` set now; answers the appointment. From any other status: 409 invalid_transition. No body needed.',
    params: IdParams,
    querystring: CenterQuery,
    headers: PostHeaders,
    response: {
      200: { ...Appointment, headers: ETagHeader },
      409: problem('invalid_transition or idempotency_conflict'),
    },
  },
}

export interface AppointmentRoutesOptions {
  store: AppointmentStore
  patients: PatientDirectory
}

/** The routes state their schemas and rules (above); each handler calls one use case. */
export const appointmentRoutes: FastifyPluginAsyncTypebox<AppointmentRoutesOptions> = async (
  app,
  { store, patients },
) => {
  app.get('/appointments', listAppointmentsRoute, async (req) => listAppointments(req.ctx, store, req.query))

  app.post('/appointments', bookAppointmentRoute, async (req, reply) => {
    const result = await bookAppointment(
      req.ctx,
      { store, patients },
      {
        body: req.body,
        queryCenter: req.query.codalmacen,
        idempotencyKey: req.headers['idempotency-key'],
        requestHash: requestHash(req.method, req.url, req.body),
      },
    )
    return sendResource(reply, result, { status: 201, location: `/appointments/${result.body.id}` })
  })

  app.get('/appointments/:id', getAppointmentRoute, async (req, reply) => {
    const appointment = await getAppointment(req.ctx, store, {
      id: req.params.id,
      queryCenter: req.query.codalmacen,
    })
    return sendResource(reply, { body: appointment })
  })

  app.patch('/appointments/:id', updateAppointmentRoute, async (req, reply) => {
    const appointment = await updateAppointment(req.ctx, store, {
      id: req.params.id,
      patch: req.body,
      queryCenter: req.query.codalmacen,
      ifMatch: req.headers['if-match'],
    })
    return sendResource(reply, { body: appointment })
  })

  app.post('/appointments/:id/checkin', checkInAppointmentRoute, async (req, reply) => {
    const result = await checkInAppointment(req.ctx, store, {
      id: req.params.id,
      queryCenter: req.query.codalmacen,
      idempotencyKey: req.headers['idempotency-key'],
      requestHash: requestHash(req.method, req.url, req.body ?? null),
    })
    return sendResource(reply, result)
  })
}
