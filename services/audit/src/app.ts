import { serviceApp, type ServiceDeps } from '@clinic/platform'
import { auditEventFhirRepository } from './db/repositories/audit-events-fhir-repository'
import { auditEventRepository } from './db/repositories/audit-events-repository'
import { auditEventRoutes } from './routes/audit-events'
import { auditEventFhirRoutes } from './routes/fhir'

/** knex: Connected as the service role (clinic_audit_writer): read and append only. */
export type Deps = ServiceDeps

/** The audit service's HTTP side: the trail, read-only. Recording is the consumer's (events/). */
export async function buildApp(deps: Deps) {
  const app = await serviceApp(deps, {
    service: 'audit',
    description: 'Append-only, hash-chained audit trail of every event and request',
  })
  await app.register(auditEventRoutes, { store: auditEventRepository(deps.knex) })
  await app.register(auditEventFhirRoutes, { store: auditEventFhirRepository(deps.knex) })
  return app
}
