import { runService } from '@clinic/platform'
import { buildApp } from './app'
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
  async (deps) => ({ app: await buildApp(deps) }),
)
