import { runService } from '@clinic/platform'
import { buildApp } from './app'
import { loadPatientsConfig } from './config'
import { APP_ROLE, SCHEMA } from './db/migrations'

// Requests run as the service role, under row-level security; migrations ran as the owner.
runService(
  {
    service: 'patients',
    schema: SCHEMA,
    role: APP_ROLE,
    outbox: true,
    config: loadPatientsConfig,
    port: (c) => c.PATIENTS_PORT,
  },
  async (deps) => ({ app: await buildApp(deps) }),
)
