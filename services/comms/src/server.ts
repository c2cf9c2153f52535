import { runService } from '@clinic/platform'
import { buildApp } from './app'
import { AppointmentsClient } from './clients/appointments-client'
import { PatientsClient } from './clients/patients-client'
import { loadCommsConfig } from './config'
import { APP_ROLE, SCHEMA } from './db/migrations'
import { providersFrom } from './providers'
import { startDeliveryWorker } from './worker'

runService(
  {
    service: 'comms',
    schema: SCHEMA,
    role: APP_ROLE,
    outbox: true,
    config: loadCommsConfig,
    port: (c) => c.COMMS_PORT,
    // The worker's deliveries, plus room for requests.
    poolMax: (c) => c.DELIVERY_CONCURRENCY + 10,
  },
  async (deps, config) => {
    const client = { secret: config.INTERNAL_AUTH_SECRET, timeoutMs: config.UPSTREAM_TIMEOUT_MS }
    const app = await buildApp({
      ...deps,
      patients: new PatientsClient({ ...client, baseUrl: config.PATIENTS_URL }),
      appointments: new AppointmentsClient({ ...client, baseUrl: config.APPOINTMENTS_URL }),
      twilio: { authToken: config.TWILIO_AUTH_TOKEN, webhookUrl: config.TWILIO_WEBHOOK_URL },
    })
    const worker = await startDeliveryWorker({
      knex: deps.knex,
      amqp: deps.amqp,
      log: deps.logger,
      providers: providersFrom(config, deps.logger),
      maxAttempts: config.DELIVERY_MAX_ATTEMPTS,
      retryBaseMs: config.DELIVERY_RETRY_BASE_MS,
      staleMinutes: config.SENDING_STALE_MINUTES,
      prefetch: config.DELIVERY_CONCURRENCY,
    })
    return { app, stops: [() => worker.stop()] }
  },
)
