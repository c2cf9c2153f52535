import { runService } from '@clinic/platform'
import { buildApp, directoriesOf } from './app'
import { loadCommsConfig, messagingLimits, twilioInboundUrl } from './config'
import { APP_ROLE, SCHEMA } from './db/migrations'
import { unsubscribeUrlFor } from './links/unsubscribe-link'
import { providersFrom } from './providers'
import { TwilioMessageTimes } from './providers/twilio-provider'
import { DeliveryWorker } from './worker'
import { DeliveryRepository } from './db/repositories/delivery-repository'
import { DELIVERY_CHANNEL } from './db/migrations/delivery-jobs'
import { fileClock } from './clock'
import { messageTx } from './db/repositories/messages-repository'
import { RemindersRepository } from './db/repositories/reminders-repository'
import { startReminderConsumer } from './reminders/consumer'
import { reminderQueue } from './reminders/queue'
import { admissionMetrics } from './metrics'
import { ReminderWorker } from './reminders/worker'
import { startWaitlistConsumer } from './waitlist/consumer'
import { offerQueue } from './waitlist/queue'

runService(
  {
    service: 'comms',
    schema: SCHEMA,
    role: APP_ROLE,
    outbox: true,
    config: loadCommsConfig,
    port: (c) => c.COMMS_PORT,
    // The worker's deliveries, plus room for requests.
    poolMax: (c) => c.DELIVERY_CONCURRENCY + c.REMINDER_CONCURRENCY + 10,
  },
  async (deps, config) => {
    const { patients, appointments } = directoriesOf(deps.services)
    const clock = fileClock(config.COMMS_CLOCK_FILE)
    const app = await buildApp({
      ...deps,
      limits: messagingLimits(config),
      twilio: {
        authToken: config.TWILIO_AUTH_TOKEN,
        webhookUrl: config.TWILIO_WEBHOOK_URL,
        inboundUrl: twilioInboundUrl(config),
        times:
          config.TWILIO_ACCOUNT_SID && config.TWILIO_AUTH_TOKEN
            ? new TwilioMessageTimes(
                {
                  accountSid: config.TWILIO_ACCOUNT_SID,
                  authToken: config.TWILIO_AUTH_TOKEN,
                  apiUrl: config.TWILIO_API_URL,
                },
                deps.logger,
              )
            : undefined,
      },
      links: { baseUrl: config.PUBLIC_BASE_URL, secret: config.COMMS_LINK_SECRET },
      clock,
    })
    const worker = new DeliveryWorker({
      store: new DeliveryRepository(deps.knex),
      log: deps.logger,
      providers: providersFrom(config, deps.logger),
      clock,
      maxAttempts: config.DELIVERY_MAX_ATTEMPTS,
      retryBaseMs: config.DELIVERY_RETRY_BASE_MS,
      staleMinutes: config.SENDING_STALE_MINUTES,
      concurrency: config.DELIVERY_CONCURRENCY,
      listen: { databaseUrl: config.DATABASE_URL, channel: DELIVERY_CHANNEL },
      unsubscribeUrl: unsubscribeUrlFor(config.COMMS_LINK_SECRET, config.PUBLIC_BASE_URL),
    }).start()
    const reminders = new RemindersRepository(deps.knex)
    const consumer = await startReminderConsumer({
      amqp: deps.amqp,
      knex: deps.knex,
      log: deps.logger,
      origins: config.origins,
      store: reminders,
      appointments,
      metrics: app.metrics,
    })
    // Reminders and waitlist offers queue their messages as any message is (queueMessage).
    const admission = { messageTx, limits: messagingLimits(config), metrics: admissionMetrics(app.metrics) }
    const links = { baseUrl: config.PUBLIC_BASE_URL, secret: config.COMMS_LINK_SECRET }
    const waitlist = await startWaitlistConsumer({
      amqp: deps.amqp,
      knex: deps.knex,
      log: deps.logger,
      origins: config.origins,
      metrics: app.metrics,
      patients,
      send: offerQueue(admission),
      links,
      // An offer expires in the appointments service's time, never comms' (COMMS_CLOCK_FILE moves
      // reminders in demos and tests, and must not drop a live offer).
      clock: () => new Date(),
    })
    const reminderWorker = new ReminderWorker({
      knex: deps.knex,
      log: deps.logger,
      store: reminders,
      patients,
      appointments,
      queue: reminderQueue(admission),
      clock,
      concurrency: config.REMINDER_CONCURRENCY,
      leaseMs: config.REMINDER_LEASE_MS,
      links,
    }).start()
    return {
      app,
      stops: [() => reminderWorker.stop(), () => waitlist.stop(), () => consumer.stop(), () => worker.stop()],
    }
  },
)
