import { requireServiceSigner, runService } from '@clinic/platform'
import { buildApp } from './app'
import { AppointmentsClient } from './clients/appointments-client'
import { PatientsClient } from './clients/patients-client'
import { loadDocumentsConfig } from './config'
import { APP_ROLE, SCHEMA } from './db/migrations'

// Requests run as the service role, under row-level security; migrations ran as the owner.
runService(
  {
    service: 'documents',
    schema: SCHEMA,
    role: APP_ROLE,
    outbox: true,
    config: loadDocumentsConfig,
    port: (c) => c.DOCUMENTS_PORT,
  },
  async (deps, config) => {
    const client = (service: 'patients' | 'appointments', baseUrl: string) => ({
      baseUrl,
      signer: requireServiceSigner(deps, service),
      timeoutMs: config.SERVICE_CALL_TIMEOUT_MS,
    })
    return {
      app: await buildApp({
        ...deps,
        patients: new PatientsClient(client('patients', config.PATIENTS_URL)),
        appointments: new AppointmentsClient(client('appointments', config.APPOINTMENTS_URL)),
        maxBytes: config.DOCUMENTS_MAX_BYTES,
      }),
    }
  },
)
