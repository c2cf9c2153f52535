import { IdParams, PatientContact, problem } from '@clinic/platform'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { getPatientContact } from '../domain/get-patient'
import type { PatientStore } from '../domain/patient-store'

/**
 * For other services, never routed by the gateway: they call it with an assertion signed with their
 * own key for this exact method and path; only the callers named here (services.json `calls`).
 * The answer is the data of `patient.created` (contact details, no notes).
 */
export const internalRoutes: FastifyPluginAsyncTypebox<{ store: PatientStore }> = async (app, { store }) => {
  app.get(
    '/internal/patients/:id',
    {
      config: { callers: ['appointments', 'comms', 'clinical', 'documents'] },
      schema: {
        hide: true,
        tags: ['internal'],
        operationId: 'internalGetPatientContact',
        summary: 'Resolve a patient of the company (service to service)',
        params: IdParams,
        response: { 200: PatientContact, 404: problem('not_found') },
      },
    },
    async (req) => getPatientContact(req.ctx, store, { id: req.params.id }),
  )
}
