import { Redis } from 'ioredis'
import { connectService, onShutdown, readVersion, runMain } from '@clinic/platform'
import { AccessLog } from './access-log'
import { buildApp } from './app'
import { Authenticator } from './auth/authenticator'
import { loadGatewayConfig } from './config'
import { identityRepository } from './db/identity-repository'
import { SCHEMA } from './db/migrations'

runMain('gateway', async () => {
  const config = loadGatewayConfig()
  const infra = await connectService({
    service: 'gateway',
    schema: SCHEMA,
    config,
    poolMax: 20,
    outbox: true,
  })
  const { logger, knex } = infra
  const redis = config.REDIS_URL
    ? new Redis(config.REDIS_URL, { maxRetriesPerRequest: 1, enableOfflineQueue: false })
    : undefined
  redis?.on('error', (err) =>
    logger.warn({ err: err.message }, 'redis error; rate limits are skipped while it is down'),
  )
  const accessLog = new AccessLog(knex, logger)
  const app = await buildApp({
    ...infra,
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
    async () => redis?.disconnect(),
    () => infra.close(),
  ])
})
