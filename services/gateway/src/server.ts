import { Redis } from 'ioredis'
import { fileClock, runService } from '@clinic/platform'
import { AccessLog } from './access-log'
import { buildApp } from './app'
import { Authenticator } from './auth/authenticator'
import { loadGatewayConfig } from './config'
import { identityRepository } from './db/identity-repository'
import { ExportRepository } from './db/export-repository'
import { ExportWorker } from './export/export-worker'
import { APP_ROLE, SCHEMA } from './db/migrations'

runService(
  {
    service: 'gateway',
    schema: SCHEMA,
    role: APP_ROLE,
    poolMax: 20,
    outbox: true,
    // An access event's commit per group commit, many a second under load: a relay pass every
    // 20 ms at most publishes several of them at once (the trail is at most that much later).
    relayMinIntervalMs: 20,
    config: loadGatewayConfig,
    port: (c) => c.GATEWAY_PORT,
    verifiesAssertions: false,
  },
  async (deps, config) => {
    const { logger, knex } = deps
    const redis = config.REDIS_URL
      ? new Redis(config.REDIS_URL, { maxRetriesPerRequest: 1, enableOfflineQueue: false })
      : undefined
    redis?.on('error', (err) =>
      logger.warn({ err: err.message }, 'redis error; rate limits are skipped while it is down'),
    )
    const accessLog = new AccessLog(knex, logger)
    const clock = fileClock(config.GATEWAY_CLOCK_FILE)
    const exports = new ExportWorker({
      knex,
      store: new ExportRepository(knex, config.EXPORT_LEASE_SECONDS),
      upstream: { upstreams: config.upstreams, signer: config.signer },
      log: logger,
      clock,
      retentionHours: config.EXPORT_RETENTION_HOURS,
      pageSize: config.EXPORT_PAGE_SIZE,
      maxFailures: config.EXPORT_MAX_FAILURES,
      concurrency: config.EXPORT_CONCURRENCY,
    })
    const app = await buildApp({
      ...deps,
      authenticator: new Authenticator(identityRepository(knex), {
        ttlMs: config.TOKEN_CACHE_TTL_MS,
        onError: (err) => logger.warn({ err }, 'could not record last_used_at'),
      }),
      accessLog,
      upstreams: config.upstreams,
      signer: config.signer,
      rateLimitPerMinute: config.RATE_LIMIT_PER_MINUTE,
      rateLimitPerAddressPerMinute: config.RATE_LIMIT_PER_ADDRESS_PER_MINUTE,
      authFailuresPerAddressPerMinute: config.AUTH_FAILURES_PER_ADDRESS_PER_MINUTE,
      corsOrigins: config.CORS_ORIGINS,
      publicBaseUrl: config.PUBLIC_BASE_URL,
      trustProxy: config.trustProxy,
      redis,
      exports: { clock, retentionHours: config.EXPORT_RETENTION_HOURS, wake: () => exports.wake() },
    })
    if (config.EXPORT_CONCURRENCY > 0) exports.start()
    return {
      app,
      stops: [() => exports.stop(), () => accessLog.close(), async () => redis?.disconnect()],
    }
  },
)
