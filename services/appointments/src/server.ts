import { fileClock, runService } from '@clinic/platform'
import { buildApp, waitlistDeps } from './app'
import { WaitlistWorker } from './waitlist-worker'
import { loadAppointmentsConfig } from './config'
import { APP_ROLE, SCHEMA } from './db/migrations'

runService(
  {
    service: 'appointments',
    schema: SCHEMA,
    role: APP_ROLE,
    outbox: true,
    config: loadAppointmentsConfig,
    port: (c) => c.APPOINTMENTS_PORT,
  },
  async (deps, config) => {
    const full = {
      ...deps,
      clock: fileClock(config.APPOINTMENTS_CLOCK_FILE),
      holdTtlSeconds: config.HOLD_TTL_SECONDS,
      offerMinutes: config.WAITLIST_OFFER_MINUTES,
    }
    const worker = new WaitlistWorker({
      ...waitlistDeps(full),
      log: deps.logger,
      listen: { databaseUrl: config.DATABASE_URL },
    }).start()
    return { app: await buildApp(full), stops: [() => worker.stop()] }
  },
)
