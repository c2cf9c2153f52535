import Fastify from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { fastifyOptions, http, readinessOf, type ServiceDeps } from '@clinic/platform'
import { PatientsRepository } from './db/patients-repository'
import { internalRoutes } from './routes/internal'
import { patientRoutes } from './routes/patients'

/** knex: Connected as the service role (row-level security applies), search_path = patients. */
export type Deps = ServiceDeps

/** The patients service: list, create, read and patch patients, plus the internal contact lookup. */
export async function buildApp(deps: Deps) {
  const app = Fastify(fastifyOptions(deps.logger)).withTypeProvider<TypeBoxTypeProvider>()
  await app.register(http, {
    service: 'patients',
    version: deps.version,
    assertionSecret: deps.assertionSecret,
    description: 'Patients of a company: demographics, contact details and legal guardian.',
    readiness: readinessOf(deps.knex, deps.amqp),
  })
  const store = new PatientsRepository(deps.knex)
  await app.register(patientRoutes, { store })
  await app.register(internalRoutes, { store })
  return app
}
