import {
  CenterQuery,
  IdParams,
  PostHeaders,
  problem,
  requestHash,
  sendResource,
  type RequestErrorOptions,
} from '@clinic/platform'
import { Type, type FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { AppointmentStore } from '../domain/appointment-store'
import { findAvailability } from '../domain/availability'
import { createHold, releaseHold } from '../domain/holds'
import type { PatientDirectory } from '../domain/directories'
import { appointmentFieldErrors } from '../domain/rules'
import { TEXT_MESSAGES } from '../schemas/appointment'
import {
  AvailabilityQuery,
  CreateHoldBody,
  Hold,
  SlotConflictProblem,
  SlotList,
} from '../schemas/availability'

const tags = ['appointments']

const availabilityRoute = {
  config: { rules: { patternMessages: TEXT_MESSAGES } as RequestErrorOptions },
  schema: {
    tags,
    operationId: 'getAvailability',
    summary: 'Free slots at a center (`limit=1`: the next available)',
    description:
      "The slot grid of each active registered practitioner who works at the center (every `slot_minutes` from the start of each working window, in the practitioner's time zone, correct across daylight-saving changes), minus appointments that are not cancelled or no-show, live holds, time off and the past. Sorted by `starts_at`, then practitioner. `to - from` at most 31 days.",
    querystring: AvailabilityQuery,
    response: { 200: SlotList },
  },
}
const holdRoute = {
  config: { rules: { extra: appointmentFieldErrors, patternMessages: TEXT_MESSAGES } as RequestErrorOptions },
  schema: {
    tags,
    operationId: 'createHold',
    summary: 'Hold a slot while the patient decides',
    description:
      'The hold blocks the slot as an appointment does until `expires_at` (HOLD_TTL_SECONDS, default 300 s); then it blocks nothing. Book it with `hold_id` in POST /appointments. Taken: 409 slot_conflict with the next free `alternatives`; outside the working hours of a registered practitioner: 422 outside_working_hours.',
    querystring: CenterQuery,
    headers: PostHeaders,
    body: CreateHoldBody,
    response: {
      201: { ...Hold, headers: { location: Type.String() } },
      409: SlotConflictProblem,
      422: problem('outside_working_hours or unknown_patient'),
      503: problem('upstream_unavailable (Retry-After)'),
    },
  },
}
const releaseRoute = {
  config: { rules: { patternMessages: TEXT_MESSAGES } as RequestErrorOptions },
  schema: {
    tags,
    operationId: 'deleteHold',
    summary: 'Release a hold',
    description:
      "Frees the slot at once. A hold that has expired or was booked, or one outside `codalmacen` or the token's centers, is 404.",
    params: IdParams,
    querystring: CenterQuery,
    response: { 204: Type.Null({ description: 'Released' }) },
  },
}

export interface CalendarRoutesOptions {
  store: AppointmentStore
  patients: PatientDirectory
  clock: () => Date
  holdTtlSeconds: number
}

/** Availability and holds (DESIGN.md section 11). */
export const calendarRoutes: FastifyPluginAsyncTypebox<CalendarRoutesOptions> = async (app, deps) => {
  app.get('/appointments/availability', availabilityRoute, async (req) => ({
    data: await findAvailability(req.ctx, deps.store, req.query),
  }))

  app.post('/appointments/holds', holdRoute, async (req, reply) => {
    const result = await createHold(req.ctx, deps, {
      body: req.body,
      idempotencyKey: req.headers['idempotency-key'],
      requestHash: requestHash(req.method, req.url, req.body),
    })
    return sendResource(reply, result, { status: 201, location: `/appointments/holds/${result.body.id}` })
  })

  app.delete('/appointments/holds/:id', releaseRoute, async (req, reply) => {
    await releaseHold(req.ctx, deps.store, { id: req.params.id, queryCenter: req.query.codalmacen })
    return reply.code(204).send(null)
  })
}
