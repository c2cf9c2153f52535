import { runService } from '@clinic/platform'
import { buildApp } from './app'
import { ConsentsRepository } from './db/repositories/consents-repository'
import { ConsentExpiryWorker } from './jobs/expiry-worker'
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
    const consents = new ConsentsRepository(deps.knex)
    const expiries = new ConsentExpiryWorker({
      store: consents,
      clock: () => new Date(),
      log: deps.logger,
      pollMs: config.CONSENT_EXPIRY_POLL_MS,
    }).start()
    return {
      app: await buildApp({
        ...deps,
        maxBytes: config.DOCUMENTS_MAX_BYTES,
        linkSecret: config.DOCUMENTS_LINK_SECRET,
        publicBaseUrl: config.PUBLIC_BASE_URL,
      }),
      stops: [() => expiries.stop()],
    }
  },
)
