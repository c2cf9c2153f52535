import { internalApi, serveInternal } from '@clinic/platform'
import type { FastifyPluginAsync } from 'fastify'
import { getPatientContact } from '../domain/get-patient'
import type { PatientStore } from '../domain/patient-store'

/**
 * For other services, never routed by the gateway (packages/platform/src/internal-api/patients.ts
 * declares it: path, schemas, callers): the answer is the data of `patient.created`.
 */
export const internalRoutes: FastifyPluginAsync<{ store: PatientStore }> = async (app, { store }) => {
  serveInternal(app, internalApi.patients.lookUp, async (req) =>
    getPatientContact(req.ctx, store, { id: req.params.id }),
  )
}
