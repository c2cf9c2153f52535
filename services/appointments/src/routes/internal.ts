import { NotFound, internalApi } from '@clinic/platform/core'
import { serveInternal } from '@clinic/platform/http'
import type { FastifyPluginAsync } from 'fastify'
import type { AppointmentStore } from '../domain/appointment-store'
import { getAppointment } from '../domain/get-appointment'
import { respondToAppointment } from '../domain/respond-to-appointment'
import { answerOffer, readOffer, type OfferDeps } from '../domain/waitlist-offers'

/**
 * For other services (comms resolves an appointment for a reminder and passes on a patient's answer
 * to one; clinical and documents check an appointment_id), never routed by the gateway;
 * packages/platform/src/internal-api/appointments.ts declares them. The caller's company and
 * centers apply exactly as on `GET /appointments/:id`; the answer is a summary (no reason, no notes).
 */
export const internalRoutes: FastifyPluginAsync<{
  store: AppointmentStore
  waitlist: Pick<OfferDeps, 'store' | 'clock'>
}> = async (app, { store, waitlist }) => {
  const { lookUp, respond, waitlistOffer, answerOffer: answer } = internalApi.appointments
  serveInternal(app, lookUp, async (req) =>
    getAppointment(req.ctx, store, { id: req.params.id, queryCenter: undefined }),
  )
  serveInternal(app, respond, async (req) =>
    respondToAppointment(req.ctx, store, { id: req.params.id, action: req.body.action }),
  )
  // A waitlist offer's page (comms): read it, answer it (DESIGN.md section 20).
  serveInternal(app, waitlistOffer, async (req) => {
    const offer = await readOffer(req.ctx, waitlist, req.params.id)
    if (!offer) throw new NotFound('No such offer')
    return offer
  })
  serveInternal(app, answer, async (req) => {
    const offer = await answerOffer(req.ctx, waitlist, req.params.id, req.body.action)
    if (!offer) throw new NotFound('No such offer')
    return offer
  })
}
