import { IdParams, problem } from '@clinic/platform/http'
import { Type, type FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { AppointmentStore } from '../domain/appointment-store'
import { getAppointment } from '../domain/get-appointment'
import { PATIENT_ACTIONS, respondToAppointment } from '../domain/respond-to-appointment'
import { AppointmentSummary } from '../schemas/appointment'

/** `confirm`: scheduled -> confirmed; `cancel`: cancelled, reason "cancelled by patient". */
const PatientResponse = Type.Object(
  { action: Type.Union(PATIENT_ACTIONS.map((a) => Type.Literal(a))) },
  { additionalProperties: false },
)

/**
 * For other services (comms resolves an appointment_id for a reminder, and passes on a patient's
 * answer to one; clinical checks an exam's appointment), never routed by the gateway: called with
 * the calling service's own assertion for its caller, so the caller's company and centers apply
 * exactly as on `GET /appointments/:id`. The answer is a summary (no reason, no notes).
 */
/** The services that may resolve an appointment of their caller (services.json `calls`). */
const LOOKUP_CALLERS = ['comms', 'clinical', 'documents'] as const

export const internalRoutes: FastifyPluginAsyncTypebox<{ store: AppointmentStore }> = async (
  app,
  { store },
) => {
  app.get(
    '/internal/appointments/:id',
    {
      config: { callers: LOOKUP_CALLERS },
      schema: {
        hide: true,
        tags: ['internal'],
        operationId: 'internalGetAppointmentSummary',
        summary: 'Resolve an appointment of the caller (service to service)',
        params: IdParams,
        response: { 200: AppointmentSummary, 404: problem('not_found') },
      },
    },
    async (req) => getAppointment(req.ctx, store, { id: req.params.id, queryCenter: undefined }),
  )
  // A patient's answer from a link (comms, with its `patient-link` principal as the actor).
  app.post(
    '/internal/appointments/:id/respond',
    {
      config: { callers: ['comms'] },
      schema: {
        hide: true,
        tags: ['internal'],
        operationId: 'internalRespondToAppointment',
        summary: "Confirm or cancel an appointment on the patient's behalf (service to service)",
        params: IdParams,
        body: PatientResponse,
        response: {
          200: AppointmentSummary,
          404: problem('not_found'),
          409: problem('invalid_transition'),
        },
      },
    },
    async (req) => respondToAppointment(req.ctx, store, { id: req.params.id, action: req.body.action }),
  )
}
