import { Redis } from 'ioredis'
import {
  Amqp,
  OutboxRelay,
  createDb,
  createLogger,
  exitOnConfigError,
  onShutdown,
  readVersion,
} from '@clinic/platform'
import { AccessLog } from './access-log'
import { buildApp } from './app'
import { Authenticator } from './auth/authenticator'
import { loadGatewayConfig } from './config'
import { identityRepository } from './db/identity-repository'
import { SCHEMA } from './db/migrations'

async function main() {
  const config = loadGatewayConfig()
  const logger = createLogger({ service: 'gateway', level: config.LOG_LEVEL })
  const knex = createDb(config.DATABASE_URL, { schema: SCHEMA, poolMax: 20, log: logger })
  const amqp = new Amqp({
    url: config.AMQP_URL,
    log: logger,
    name: 'gateway',
    queueType: config.AMQP_QUEUE_TYPE as 'classic',
  })
  void amqp.start()
  const relay = new OutboxRelay({
    knex,
    schema: SCHEMA,
    databaseUrl: config.DATABASE_URL,
    amqp,
    log: logger,
    batchSize: 500,
  })
  await relay.start()
  const redis = config.REDIS_URL
    ? new Redis(config.REDIS_URL, { maxRetriesPerRequest: 1, enableOfflineQueue: false })
    : undefined
  redis?.on('error', (err) =>
    logger.warn({ err: err.message }, 'redis error; rate limits are skipped while it is down'),
  )
  const accessLog = new AccessLog(knex, logger)
  const app = await buildApp({
    logger,
    knex,
    amqp,
    version: readVersion(),
    assertionSecret: config.INTERNAL_AUTH_SECRET,
    authenticator: new Authenticator(identityRepository(knex), {
      ttlMs: config.TOKEN_CACHE_TTL_MS,
      onError: (err) => logger.warn({ err }, 'could not record last_used_at'),
    }),
    accessLog,
    upstreams: {
      patients: config.PATIENTS_URL,
      appointments: config.APPOINTMENTS_URL,
      comms: config.COMMS_URL,
      audit: config.AUDIT_URL,
    },
    rateLimitPerMinute: config.RATE_LIMIT_PER_MINUTE,
    corsOrigins: config.CORS_ORIGINS,
    trustProxy: config.TRUST_PROXY,
    redis,
  })
  await app.listen({ port: config.GATEWAY_PORT, host: config.HOST })
  onShutdown(logger, [
    () => app.close(),
    () => accessLog.close(),
    () => relay.stop(),
    () => amqp.close(),
    async () => redis?.disconnect(),
    () => knex.destroy(),
  ])
}

main().catch((err) => {
  exitOnConfigError(err)
  process.stderr.write(`gateway failed to start: ${(err as Error).stack}\n`)
  process.exit(1)
})
