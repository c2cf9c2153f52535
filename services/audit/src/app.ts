import Fastify from 'fastify'
import { fastifyOptions, http, readinessOf, type ServiceDeps } from '@clinic/platform'
import { auditEventRoutes } from './routes/audit-events'

/** knex: Connected as the service role (clinic_audit_writer): read and append only. */
export type Deps = ServiceDeps

/** The audit service's HTTP side: the trail, read-only. Recording is the consumer's (events/). */
export async function buildApp(deps: Deps) {
  const app = Fastify(fastifyOptions(deps.logger))
  await app.register(http, {
    service: 'audit',
    version: deps.version,
    assertionSecret: deps.assertionSecret,
    description: 'Append-only, hash-chained audit trail of every event and request',
    readiness: readinessOf(deps.knex, deps.amqp),
  })
  await app.register(auditEventRoutes, { deps })
  return app
}
