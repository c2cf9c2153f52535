import type { Knex } from 'knex'
import type { Logger } from 'pino'
import { Amqp } from './amqp'
import { exitOnConfigError, loadConfig, v, type Config } from './config'
import { createDb, ensureDatabase, migrate, type Migration } from './db'
import type { ReadinessCheck } from './http'
import { createLogger } from './logging'
import { OutboxRelay } from './outbox'

/** The part of every service's configuration that is the same everywhere (DESIGN.md section 6). */
export const databaseConfig = {
  DATABASE_URL: v.url({
    default: 'postgres://postgres@127.0.0.1:5432/clinic',
    protocols: ['postgres:', 'postgresql:'],
  }),
}
export const sharedConfig = {
  ...databaseConfig,
  HOST: v.string({ default: '127.0.0.1' }),
  AMQP_URL: v.url({ default: 'amqp://guest:guest@127.0.0.1:5672', protocols: ['amqp:', 'amqps:'] }),
  AMQP_QUEUE_TYPE: v.string({ default: 'classic', choices: ['classic', 'quorum'] }),
  INTERNAL_AUTH_SECRET: v.string({ min: 32, secret: true }),
  LOG_LEVEL: v.string({
    default: 'info',
    choices: ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'],
  }),
}
export type SharedConfig = Config<typeof sharedConfig>

export interface Infrastructure {
  logger: Logger
  knex: Knex
  amqp: Amqp
  relay: OutboxRelay | null
  /** Stops the relay, then closes the broker and database connections. */
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
  role?: string
  poolMax?: number
  outbox: boolean
}): Promise<Infrastructure> {
  const { config } = o
  const logger = createLogger({ service: o.service, level: config.LOG_LEVEL })
  const knex = createDb(config.DATABASE_URL, {
    schema: o.schema,
    role: o.role,
    poolMax: o.poolMax,
    log: logger,
  })
  const amqp = new Amqp({
    url: config.AMQP_URL,
    log: logger,
    name: o.service,
    queueType: config.AMQP_QUEUE_TYPE as 'classic' | 'quorum',
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

/** A service's db/migrate.ts: creates the database if needed and migrates the service's schema. */
export function runMigrations(schema: string, migrations: Migration[]): void {
  const main = async () => {
    const { DATABASE_URL } = loadConfig(databaseConfig)
    await ensureDatabase(DATABASE_URL)
    const applied = await migrate(DATABASE_URL, schema, migrations)
    process.stdout.write(`${schema}: ${applied.length ? `applied ${applied.join(', ')}` : 'up to date'}\n`)
  }
  main().catch((err) => {
    exitOnConfigError(err)
    process.stderr.write(`${schema} migrations failed: ${(err as Error).message}\n`)
    process.exit(1)
  })
}

/** What every service's buildApp gets; a service adds its own (clients, stores) to it. */
export interface ServiceDeps {
  logger: Logger
  knex: Knex
  amqp: Amqp
  version: string
  /** HMAC secret shared with the gateway. */
  assertionSecret: string
}
