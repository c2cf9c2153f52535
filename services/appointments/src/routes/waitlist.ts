import {
  CenterQuery,
  ETagHeader,
  IdParams,
  PostHeaders,
  listOf,
  problem,
  requestHash,
  sendResource,
  type RequestErrorOptions,
} from '@clinic/platform'
import { Type, type FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { PatientDirectory } from '../domain/directories'
import { cancelEntry, createEntry, getEntry, listEntries } from '../domain/waitlist'
import type { WaitlistStore } from '../domain/waitlist-store'
import { TEXT_MESSAGES } from '../schemas/appointment'
import { CreateWaitlistEntryBody, ListWaitlistQuery, WaitlistEntry } from '../schemas/waitlist'

const tags = ['waitlist']
const rules = { patternMessages: TEXT_MESSAGES } as RequestErrorOptions

const createRoute = {
  config: { rules: { ...rules, readOnlyFields: ['id', 'status', 'offer', 'appointment_id', 'version'] } },
  schema: {
    tags,
    operationId: 'createWaitlistEntry',
    summary: 'Put a patient on the waitlist',
    description:
      "The entry is `waiting`. When a slot frees at its center (a cancellation, a move, a hold that expires or is released, new working hours) that fits it (its practitioner or any, `duration_minutes`, `earliest`..`latest`, `days`, `times` in `time_zone`), the first matching entry (highest `priority`, then oldest) gets it: the slot is held for WAITLIST_OFFER_MINUTES and the patient (or their guardian) receives a link to accept or decline (`offered`, with `offer`). Accepting books it (`booked`, `appointment_id`); declining offers it to the next entry and the entry waits again; an offer left unanswered expires the entry (`expired`). In the company's quiet hours the offer waits for their end. Staff may still book the held slot with `hold_id` = `offer.id`: the entry then waits again. `patient_id` must be a patient of the company (422 unknown_patient).",
    querystring: CenterQuery,
    headers: PostHeaders,
    body: CreateWaitlistEntryBody,
    response: {
      201: { ...WaitlistEntry, headers: { ...ETagHeader, location: Type.String() } },
      422: problem('unknown_patient'),
      503: problem('upstream_unavailable (Retry-After)'),
    },
  },
}
const listRoute = {
  config: { rules },
  schema: {
    tags,
    operationId: 'listWaitlistEntries',
    summary: 'List waitlist entries (oldest first)',
    description:
      'Filters: `status`, `practitioner`, `patient_id`, `codalmacen`. A token limited to centers sees only its centers.',
    querystring: ListWaitlistQuery,
    response: { 200: listOf(WaitlistEntry, 'WaitlistEntryList') },
  },
}
const getRoute = {
  config: { rules },
  schema: {
    tags,
    operationId: 'getWaitlistEntry',
    summary: 'Read a waitlist entry',
    description:
      "With its open `offer` while offered. Another company's, or one outside the token's centers, is 404.",
    params: IdParams,
    querystring: CenterQuery,
    response: { 200: { ...WaitlistEntry, headers: ETagHeader } },
  },
}
const deleteRoute = {
  config: { rules },
  schema: {
    tags,
    operationId: 'cancelWaitlistEntry',
    summary: 'Take an entry off the waitlist',
    description:
      'The entry is `cancelled`; an open offer is withdrawn and its slot offered to the next entry. Again: 204. A booked or expired entry: 409 invalid_transition (cancel the appointment instead).',
    params: IdParams,
    querystring: CenterQuery,
    response: { 204: Type.Null({ description: 'Cancelled' }), 409: problem('invalid_transition') },
  },
}

/** The waitlist (DESIGN.md section 20). */
export const waitlistRoutes: FastifyPluginAsyncTypebox<{
  store: WaitlistStore
  patients: PatientDirectory
}> = async (app, { store, patients }) => {
  app.get('/appointments/waitlist', listRoute, async (req) => listEntries(req.ctx, store, req.query))

  app.post('/appointments/waitlist', createRoute, async (req, reply) => {
    const result = await createEntry(
      req.ctx,
      { store, patients },
      {
        body: req.body,
        idempotencyKey: req.headers['idempotency-key'],
        requestHash: requestHash(req.method, req.url, req.body),
      },
    )
    return sendResource(reply, result, { status: 201, location: `/appointments/waitlist/${result.body.id}` })
  })

  app.get('/appointments/waitlist/:id', getRoute, async (req, reply) =>
    sendResource(reply, { body: await getEntry(req.ctx, store, req.params.id, req.query.codalmacen) }),
  )

  app.delete('/appointments/waitlist/:id', deleteRoute, async (req, reply) => {
    await cancelEntry(req.ctx, store, req.params.id, req.query.codalmacen)
    return reply.code(204).send(null)
  })
}
