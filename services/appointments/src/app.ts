import Fastify from 'fastify'
import { fastifyOptions, http, readinessOf, type ServiceDeps } from '@clinic/platform'

export type Deps = ServiceDeps

/**
 * The appointments service. Its resource routes (list, create, read, patch, check-in) are the
 * next issue; today it serves its health, metrics and OpenAPI and refuses calls that did not come
 * through the gateway.
 */
export async function buildApp(deps: Deps) {
  const app = Fastify(fastifyOptions(deps.logger))
  await app.register(http, {
    service: 'appointments',
    version: deps.version,
    assertionSecret: deps.assertionSecret,
    readiness: readinessOf(deps.knex, deps.amqp),
  })
  return app
}
