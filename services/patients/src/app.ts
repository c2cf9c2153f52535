import { serviceApp, type ServiceDeps } from '@clinic/platform'
import { PatientsRepository } from './db/repositories/patients-repository'
import { patientFhirRoutes } from './routes/fhir'
import { internalRoutes } from './routes/internal'
import { patientRoutes } from './routes/patients'

/** knex: Connected as the service role (row-level security applies), search_path = patients. */
export type Deps = ServiceDeps

/** The patients service: list, create, read and patch patients, plus the internal contact lookup. */
export async function buildApp(deps: Deps) {
  const app = await serviceApp(deps, {
    service: 'patients',
    description: 'Patients of a company: demographics, contact details and legal guardian.',
  })
  const store = new PatientsRepository(deps.knex)
  await app.register(patientRoutes, { store })
  await app.register(internalRoutes, { store })
  await app.register(patientFhirRoutes, { store })
  return app
}
