import { internalApi } from '@clinic/platform/core'
import { serveInternal } from '@clinic/platform/http'
import type { FastifyPluginAsync } from 'fastify'
import type { AppointmentStore } from '../domain/appointment-store'
import { getAppointment } from '../domain/get-appointment'
import { respondToAppointment } from '../domain/respond-to-appointment'

/**
 * For other services (comms resolves an appointment for a reminder and passes on a patient's answer
 * to one; clinical and documents check an appointment_id), never routed by the gateway;
 * packages/platform/src/internal-api/appointments.ts declares them. The caller's company and
 * centers apply exactly as on `GET /appointments/:id`; the answer is a summary (no reason, no notes).
 */
export const internalRoutes: FastifyPluginAsync<{ store: AppointmentStore }> = async (app, { store }) => {
  const { lookUp, respond } = internalApi.appointments
  serveInternal(app, lookUp, async (req) =>
    getAppointment(req.ctx, store, { id: req.params.id, queryCenter: undefined }),
  )
  serveInternal(app, respond, async (req) =>
    respondToAppointment(req.ctx, store, { id: req.params.id, action: req.body.action }),
  )
}
