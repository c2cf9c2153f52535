import { runService } from '@clinic/platform'
import { buildApp } from './app'
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
  async (deps, config) => ({
    app: await buildApp({
      ...deps,
      holdTtlSeconds: config.HOLD_TTL_SECONDS,
    }),
  }),
)
