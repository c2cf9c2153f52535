import { requireServiceSigner, runService } from '@clinic/platform'
import { buildApp } from './app'
import { PatientsClient } from './clients/patients-client'
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
      patients: new PatientsClient({
        baseUrl: config.PATIENTS_URL,
        signer: requireServiceSigner(deps, 'patients'),
        timeoutMs: config.SERVICE_CALL_TIMEOUT_MS,
      }),
      holdTtlSeconds: config.HOLD_TTL_SECONDS,
    }),
  }),
)
