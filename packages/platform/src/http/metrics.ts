import type { FastifyInstance } from 'fastify'
import type { Knex } from 'knex'
import { Counter, Histogram, Registry, collectDefaultMetrics } from 'prom-client'
import { routeConfig } from './route-config'

declare module 'fastify' {
  interface FastifyInstance {
    metrics: Registry
  }
}

/**
 * The counter `name` of `registry`, made the first time: several consumers or apps of one process
 * (and tests building many) share one registry, where a name may be registered once.
 */
export function registryCounter<L extends string>(
  registry: Registry,
  o: { name: string; help: string; labelNames: readonly L[] },
): Counter<L> {
  return (
    (registry.getSingleMetric(o.name) as Counter<L> | undefined) ??
    new Counter({ ...o, registers: [registry] })
  )
}

/** One 'query' listener per knex (tests build many apps on one), feeding each app's counter. */
const statementCounters = new WeakMap<Knex, Set<Counter>>()
function countStatements(knex: Knex, counter: Counter) {
  let counters = statementCounters.get(knex)
  if (!counters) {
    const set = new Set<Counter>()
    statementCounters.set(knex, set)
    knex.on('query', () => {
      for (const c of set) c.inc()
    })
    counters = set
  }
  counters.add(counter)
}

/**
 * The service's Prometheus registry (`app.metrics`): process metrics, request durations by route
 * and status, and with `knex` the statements sent to PostgreSQL (BEGIN and COMMIT included: the
 * bench divides them by requests).
 */
export function httpMetrics(app: FastifyInstance, o: { service: string; knex?: Knex }) {
  const metrics = new Registry()
  metrics.setDefaultLabels({ service: o.service })
  collectDefaultMetrics({ register: metrics })
  const httpDuration = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'HTTP request duration by route and status',
    labelNames: ['method', 'route', 'status'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [metrics],
  })
  app.decorate('metrics', metrics)
  const knex = o.knex
  if (knex) {
    const statements = new Counter({
      name: 'db_statements_total',
      help: 'SQL statements sent to the database, transaction control included',
      registers: [metrics],
    })
    countStatements(knex, statements)
    app.addHook('onClose', async () => statementCounters.get(knex)?.delete(statements))
  }
  app.addHook('onResponse', (req, reply, done) => {
    httpDuration.observe(
      { method: req.method, route: routeConfig(req).url ?? 'unmatched', status: String(reply.statusCode) },
      reply.elapsedTime / 1000,
    )
    done()
  })
}
