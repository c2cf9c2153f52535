import Fastify from 'fastify'
import type { Knex } from 'knex'
import type { Logger } from 'pino'
import { Amqp } from './amqp'
import {
  assertionKeysOf,
  requireServiceSigner,
  type AssertionKeys,
  type AssertionSigner,
} from './assertion-keys'
import { ConfigError, exitOnConfigError, v, type Config } from './config'
import { commonTables, createDb, stackDbRole, type Migration } from './db/index'
import { databaseConfig } from './migration-step'
import { DEFAULT_INTERNAL_NETWORKS, fastifyOptions, http, type ReadinessCheck } from './http'
import { serve } from './lifecycle'
import { brokerUserPrefix, eventOrigins, type EventOrigins } from './event-origin'
import { createLogger } from './logging'
import { OutboxRelay } from './outbox'
import { startOtlpTracing, tracingConfig } from './tracing-sdk'
import { readVersion } from './version'
import { internalClients } from './internal-client'
import { CALLS, type Caller, type ServicesOf } from './internal-api/services'
import { envName } from '../naming.cjs'

export const sharedConfig = {
  ...databaseConfig,
  HOST: v.string({ default: '127.0.0.1' }),
  AMQP_URL: v.url({
    default: 'amqp://guest:guest@127.0.0.1:5672',
    protocols: ['amqp:', 'amqps:'],
    secret: true,
  }),
  /**
   * The nodes of a RabbitMQ cluster, host:port,host:port: a connection lost (a node stopped) is
   * made again to the next. Unset: AMQP_URL's host alone.
   */
  AMQP_HOSTS: v.list({ default: '' }),
  /**
   * The gateway's public key (assertion-keys.ts): what every service serves is signed with its
   * private half. Required of every service (assertionKeysOf); the gateway itself has none.
   */
  GATEWAY_VERIFY_KEY: v.string({ optional: true }),
  /** A service that calls others (services.json `calls`): its own private key for those calls. */
  SERVICE_SIGNING_KEY: v.string({ optional: true, secret: true }),
  /** A service that others call: `<caller>=<its public key>,...`, its callers only. */
  SERVICE_VERIFY_KEYS: v.list({ optional: true }),
  /** A service that calls others: how long a call may take before its request answers 503. */
  SERVICE_CALL_TIMEOUT_MS: v.int({ default: '2000', min: 100, max: 30_000 }),
  LOG_LEVEL: v.string({
    default: 'info',
    choices: ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'],
  }),
  /** On SIGTERM: how long requests are still served while readiness says 503. */
  SHUTDOWN_DRAIN_MS: v.int({ default: '1000', min: 0 }),
  /** On SIGTERM: the most the whole shutdown may take before the process exits anyway. */
  SHUTDOWN_GRACE_MS: v.int({ default: '25000', min: 1000 }),
  /**
   * Addresses and CIDR ranges that may read /metrics and /openapi.json without a gateway assertion
   * (loopback always may); anyone else gets a 404. Default: the private ranges (http.ts).
   */
  INTERNAL_NETWORKS: v.list({ default: DEFAULT_INTERNAL_NETWORKS.join(',') }),
  /**
   * A second port answering only GET /metrics (Kubernetes: the API port + 1000, the one port the
   * monitoring namespace may reach). Unset: metrics on the API port only (internal networks).
   */
  METRICS_PORT: v.port({ optional: true }),
  /**
   * The most database connections this process opens, whatever its own default (10; 20 for the
   * gateway and webhooks). Test stacks set it low so several fit under one server's max_connections.
   */
  DB_POOL_MAX: v.int({ optional: true, min: 1 }),
  ...tracingConfig,
}
export type SharedConfig = Config<typeof sharedConfig>

/**
 * The configuration of a service that consumes other services' events (audit, webhooks, comms)
 * with `origins`, what its consumers believe about where an event comes from (event-origin.ts),
 * frozen. Its AMQP_URL must log in as its own broker user; the others' users follow its prefix.
 */
export function withEventOrigins<C extends { AMQP_URL: string }>(
  config: C,
  service: string,
): Readonly<C & { origins: EventOrigins }> {
  return Object.freeze({ ...config, origins: eventOrigins(brokerUserPrefix(config.AMQP_URL, service)) })
}

export interface Infrastructure {
  logger: Logger
  knex: Knex
  amqp: Amqp
  relay: OutboxRelay | null
  /** Stops the relay, closes the broker and database connections, then exports the last spans. */
  close(): Promise<void>
}

/**
 * What a service's server.ts connects before it builds its app: a logger, its schema's knex
 * (optionally as a least-privilege role), the broker connection (retried in the background) and,
 * when it emits events, the outbox relay.
 */
export async function connectService(o: {
  service: string
  schema: string
  config: SharedConfig
  /** The NOLOGIN role its requests run as (SET ROLE), named as its migrations name it: DB_ROLE_PREFIX comes before. */
  role?: string
  poolMax?: number
  outbox: boolean
  /** The relay's least time between passes (RelayOptions.minPassIntervalMs). */
  relayMinIntervalMs?: number
  /** False for the gateway: the trace contexts requests come with are its clients' (samplerOf). */
  verifiesAssertions?: boolean
}): Promise<Infrastructure> {
  const { config } = o
  const logger = createLogger({ service: o.service, level: config.LOG_LEVEL })
  const tracing = await startOtlpTracing(config, logger, o.service, o.verifiesAssertions === false)
  const knex = createDb(config.DATABASE_URL, {
    schema: o.schema,
    role: o.role && stackDbRole(o.role, config.DB_ROLE_PREFIX),
    poolMax: Math.min(o.poolMax ?? 10, config.DB_POOL_MAX ?? Infinity),
    log: logger,
    refusePrivileged: true,
  })
  const amqp = new Amqp({
    url: config.AMQP_URL,
    hosts: config.AMQP_HOSTS,
    log: logger,
    name: o.service,
  })
  void amqp.start()
  const relay = o.outbox
    ? new OutboxRelay({
        knex,
        schema: o.schema,
        databaseUrl: config.DATABASE_URL,
        amqp,
        log: logger,
        batchSize: 500,
        minPassIntervalMs: o.relayMinIntervalMs,
      })
    : null
  await relay?.start()
  return {
    logger,
    knex,
    amqp,
    relay,
    async close() {
      await relay?.stop()
      await amqp.close()
      await knex.destroy()
      await tracing?.shutdown()
    },
  }
}

/** `/health/ready` of a service with a database and a broker. */
export function readinessOf(knex: Knex, amqp: Amqp): ReadinessCheck[] {
  return [
    { name: 'database', check: () => knex.raw('select 1') },
    {
      name: 'broker',
      check: async () => {
        if (!amqp.connected) throw new Error('disconnected')
      },
    },
  ]
}

/** Runs a server.ts `main`: a bad configuration is one line and exit 78, anything else exit 1. */
export function runMain(service: string, main: () => Promise<void>): void {
  main().catch((err) => {
    exitOnConfigError(err)
    process.stderr.write(`${service} failed to start: ${(err as Error).stack}\n`)
    process.exit(1)
  })
}

/** What every service's buildApp gets; a service adds its own (clients, stores) to it. */
export interface ServiceDeps {
  logger: Logger
  knex: Knex
  amqp: Amqp
  version: string
  /** The public keys of who may sign what this service serves: the gateway and its callers. */
  assertionKeys: AssertionKeys
  /** What this service signs its calls to others with; null when it has no SERVICE_SIGNING_KEY. */
  serviceSigner: AssertionSigner | null
  /** INTERNAL_NETWORKS: who reads /metrics and /openapi.json without an assertion. */
  internalNetworks?: readonly string[]
}

/**
 * A service's first migration: the platform tables (outbox, processed_events, idempotency_keys).
 * Its name is `0001_base`; never edited after it lands, like every migration.
 */
export function baseMigration(schema: string): Migration {
  return {
    name: '0001_base',
    async up(knex) {
      await commonTables.outbox(knex, schema)
      await commonTables.processedEvents(knex)
      await commonTables.idempotencyKeys(knex)
    },
  }
}

/**
 * A service's Fastify app with the platform's HTTP plugin registered (assertion, problem+json,
 * version header, probes reporting its database and broker, metrics, OpenAPI): its routes next.
 */
export async function serviceApp(deps: ServiceDeps, o: { service: string; description: string }) {
  const app = Fastify(fastifyOptions(deps.logger, deps.version))
  await app.register(http, {
    service: o.service,
    version: deps.version,
    assertionKeys: deps.assertionKeys,
    internalNetworks: deps.internalNetworks,
    description: o.description,
    // Its routes are tagged with its name: the tag's description is the service's.
    tags: [{ name: o.service, description: o.description }],
    readiness: readinessOf(deps.knex, deps.amqp),
    knex: deps.knex,
  })
  return app
}

/**
 * The typed clients of the services `service` calls (services.json `calls`), signed with its own
 * SERVICE_SIGNING_KEY (required then), each at its `<NAME>_URL` (the config declares it:
 * `v.serviceUrl(name)`), within SERVICE_CALL_TIMEOUT_MS.
 */
export function servicesOf<S extends string>(
  service: S,
  deps: { serviceSigner: AssertionSigner | null },
  config: SharedConfig,
): ServicesOf<S> {
  const calls: readonly string[] = Object.hasOwn(CALLS, service) ? CALLS[service as Caller] : []
  if (!calls.length) return {} as ServicesOf<S>
  const urls = new Map(calls.map((c) => [c, (config as Record<string, unknown>)[envName(c, 'URL')]]))
  const missing = calls.filter((c) => typeof urls.get(c) !== 'string')
  if (missing.length)
    throw new ConfigError(
      `${service} calls ${missing.join(', ')} (services.json) but its config.ts declares no ${missing.map((c) => envName(c, 'URL')).join(', ')}`,
    )
  return internalClients(service, {
    signer: requireServiceSigner(deps, calls.join(' and ')),
    timeoutMs: config.SERVICE_CALL_TIMEOUT_MS,
    baseUrl: (c) => urls.get(c) as string,
  })
}

/**
 * A service's whole server.ts: loads its configuration, connects (connectService), builds the app
 * from the dependencies every service gets (with `services`, its typed clients of the services it
 * calls), then serves it until SIGTERM (serve: drain, close, `stops` in order, connections last).
 */
export function runService<C extends SharedConfig, S extends string = string>(
  spec: {
    service: S
    schema: string
    /** The least-privilege role requests run as (SET ROLE, after DB_ROLE_PREFIX); migrations ran as the owner. */
    role?: string
    /** Database connections (default 10). */
    poolMax?: number | ((config: C) => number)
    outbox: boolean
    /** The relay's least time between passes (RelayOptions.minPassIntervalMs). */
    relayMinIntervalMs?: number
    config: () => C
    port: (config: C) => number
    /** False for the gateway, which signs what services verify and verifies no assertion. */
    verifiesAssertions?: boolean
  },
  build: (
    deps: ServiceDeps & { services: ServicesOf<S> },
    config: C,
  ) => Promise<{ app: Parameters<typeof serve>[0]; stops?: Array<() => Promise<unknown>> }>,
): void {
  runMain(spec.service, async () => {
    const config = spec.config()
    const poolMax = typeof spec.poolMax === 'function' ? spec.poolMax(config) : spec.poolMax
    const infra = await connectService({ ...spec, poolMax, config })
    const deps = {
      ...infra,
      ...(spec.verifiesAssertions === false
        ? { assertionKeys: new Map(), serviceSigner: null }
        : assertionKeysOf(spec.service, config)),
      version: readVersion(),
      internalNetworks: config.INTERNAL_NETWORKS,
    }
    const services = servicesOf(spec.service, deps, config)
    const { app, stops } = await build({ ...deps, services }, config)
    await serve(app, { port: spec.port(config), config, infra, stops })
  })
}
