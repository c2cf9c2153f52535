import { IdParams, problem } from '@clinic/platform/http'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { AppointmentStore } from '../domain/appointment-store'
import { getAppointment } from '../domain/get-appointment'
import { AppointmentSummary } from '../schemas/appointment'

/**
 * For other services (comms resolves an appointment_id for a reminder), never routed by the
 * gateway: called with a signed assertion for the caller, so the caller's company and centers
 * apply exactly as on `GET /appointments/:id`. The answer is a summary (no reason, no notes).
 */
export const internalRoutes: FastifyPluginAsyncTypebox<{ store: AppointmentStore }> = async (
  app,
  { store },
) => {
  app.get(
    '/internal/appointments/:id',
    {
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
}
