import { fhirRoutes } from '@clinic/platform'
import type { FastifyInstance } from 'fastify'
import { readFhirPatient, searchFhirPatients } from '../domain/fhir-patient'
import type { PatientStore } from '../domain/patient-store'

/** FHIR R4 `Patient` read and search (DESIGN.md section 19). */
export async function patientFhirRoutes(app: FastifyInstance, { store }: { store: PatientStore }) {
  await fhirRoutes(app, [
    {
      type: 'Patient',
      read: (ctx, id) => readFhirPatient(ctx, store, id),
      search: (ctx, search) => searchFhirPatients(ctx, store, search),
    },
  ])
}
