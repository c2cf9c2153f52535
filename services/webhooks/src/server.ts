import { runService } from '@clinic/platform'
import { buildApp } from './app'
import { loadWebhooksConfig } from './config'
import { feedWriter, purgeEvents } from './db/repositories/feed-repository'
import { jobRepository } from './db/repositories/worker-repository'
import { APP_ROLE, SCHEMA } from './db/migrations'
import { systemResolver } from './delivery/address-policy'
import { Notifications } from './delivery/notifications'
import { DeliveryWorker } from './delivery/worker'
import { SecretBox } from './domain/secrets'
import { startEventsConsumer } from './events/consumer'

const PURGE_EVERY_MS = 60 * 60 * 1000

runService(
  {
    service: 'webhooks',
    schema: SCHEMA,
    role: APP_ROLE,
    outbox: true,
    config: loadWebhooksConfig,
    port: (c) => c.WEBHOOKS_PORT,
    // Attempts hold a socket, not a connection: a claim, the records and the requests.
    poolMax: () => 20,
  },
  async (deps, config) => {
    const { knex, logger, amqp } = deps
    const box = new SecretBox(config.WEBHOOKS_SECRET_KEY)
    const policy = { allowInsecure: config.WEBHOOKS_ALLOW_INSECURE, resolve: systemResolver }
    const clock = () => new Date()
    const notifications = new Notifications({ databaseUrl: config.DATABASE_URL, log: logger })
    await notifications.start()
    const app = await buildApp({
      ...deps,
      box,
      policy,
      feedChanged: (c, ms, s) => notifications.changed(c, ms, s),
    })
    const consumer = await startEventsConsumer({
      amqp,
      knex,
      feed: feedWriter,
      log: logger,
      origins: config.origins,
      metrics: app.metrics,
      clock,
    })
    const worker = new DeliveryWorker({
      jobs: jobRepository(knex),
      log: logger,
      box,
      policy,
      clock,
      concurrency: config.WEBHOOKS_CONCURRENCY,
      perEndpoint: config.WEBHOOKS_ENDPOINT_CONCURRENCY,
      retrySchedule: config.retrySchedule,
    }).start()
    notifications.onDue(() => worker.wake())
    const purge = () =>
      purgeEvents(knex, new Date(Date.now() - config.EVENTS_RETENTION_DAYS * 86_400_000))
        .then((n) => n && logger.info({ purged: n }, 'events past retention dropped'))
        .catch((err: unknown) => logger.warn({ err }, 'purging events failed'))
    const timer = setInterval(() => void purge(), PURGE_EVERY_MS)
    timer.unref()
    void purge()
    return {
      app,
      stops: [
        () => consumer.stop(),
        () => worker.stop(),
        () => notifications.stop(),
        async () => clearInterval(timer),
      ],
    }
  },
)
