import Fastify from 'fastify'
import type { Knex } from 'knex'
import type { Logger } from 'pino'
import { fastifyOptions, http, readinessOf, type Amqp } from '@clinic/platform'
import { auditEventRoutes } from './routes/audit-events'

export interface Deps {
  logger: Logger
  /** Connected as the service role (clinic_audit_writer): read and append only. */
  knex: Knex
  amqp: Amqp
  version: string
  assertionSecret: string
}

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
