import { requireServiceSigner, runService } from '@clinic/platform'
import { buildApp } from './app'
import { AppointmentsClient } from './clients/appointments-client'
import { PatientsClient } from './clients/patients-client'
import { loadClinicalConfig } from './config'
import { APP_ROLE, SCHEMA } from './db/migrations'

// Requests run as the service role, under row-level security; migrations ran as the owner.
runService(
  {
    service: 'clinical',
    schema: SCHEMA,
    role: APP_ROLE,
    outbox: true,
    config: loadClinicalConfig,
    port: (c) => c.CLINICAL_PORT,
  },
  async (deps, config) => ({
    app: await buildApp({
      ...deps,
      patients: new PatientsClient({
        baseUrl: config.PATIENTS_URL,
        signer: requireServiceSigner(deps, 'patients'),
        timeoutMs: config.SERVICE_CALL_TIMEOUT_MS,
      }),
      appointments: new AppointmentsClient({
        baseUrl: config.APPOINTMENTS_URL,
        signer: requireServiceSigner(deps, 'appointments'),
        timeoutMs: config.SERVICE_CALL_TIMEOUT_MS,
      }),
    }),
  }),
)
