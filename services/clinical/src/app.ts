import { serviceApp, type ServiceDeps, type ServicesOf } from '@clinic/platform'
import { ExamsRepository } from './db/repositories/exams-repository'
import { ClinicalFhirRepository } from './db/repositories/fhir-repository'
import type { AppointmentDirectory, PatientDirectory } from './domain/directories'
import { examRoutes } from './routes/exams'
import { clinicalFhirRoutes } from './routes/fhir'
import { findingRoutes } from './routes/findings'
import { internalRoutes } from './routes/internal'
import { prescriptionRoutes } from './routes/prescriptions'
import { signingRoutes } from './routes/signing'
import { trendRoutes } from './routes/trends'

/** knex: connected as the service role (row-level security applies), search_path = clinical. */
export interface Deps extends ServiceDeps {
  /** Its typed clients of the services it calls (services.json `calls`: patients, appointments). */
  services: ServicesOf<'clinical'>
  /** What time it is (default performed_at, signed_at, a prescription's validity); tests move it. */
  clock?: () => Date
}
/** What server.ts serves and tests inject into: the platform's Fastify app with its routes. */
export type App = Awaited<ReturnType<typeof serviceApp>>

/** The clinical service: ophthalmic exams per eye, signed and amended, prescriptions, trends, FHIR. */
export async function buildApp(deps: Deps): Promise<App> {
  const app = await serviceApp(deps, {
    service: 'clinical',
    description:
      'The ophthalmic clinical record: exams with findings per eye (visual acuity, IOP, refraction, diagnoses), signed and then only amended, prescriptions, trends per eye, and FHIR R4 out.',
  })
  const clock = deps.clock ?? (() => new Date())
  const store = new ExamsRepository(deps.knex)
  // The directories over the typed clients: a record of the caller's company, or null.
  const patients: PatientDirectory = { find: deps.services.patients.lookUp }
  const appointments: AppointmentDirectory = { find: deps.services.appointments.lookUp }
  await app.register(examRoutes, { store, patients, appointments, clock })
  await app.register(findingRoutes, { store })
  await app.register(signingRoutes, { store, clock })
  await app.register(prescriptionRoutes, { store, clock })
  await app.register(trendRoutes, { store, patients })
  await app.register(internalRoutes, { store })
  await app.register(clinicalFhirRoutes, { store: new ClinicalFhirRepository(deps.knex) })
  return app
}
