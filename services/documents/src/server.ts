import { requireServiceSigner, runService } from '@clinic/platform'
import { buildApp } from './app'
import { AppointmentsClient } from './clients/appointments-client'
import { ClinicalClient } from './clients/clinical-client'
import { PatientsClient } from './clients/patients-client'
import { CommsLinkSender } from './clients/comms-client'
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
    const client = (service: 'patients' | 'appointments' | 'clinical' | 'comms', baseUrl: string) => ({
      baseUrl,
      signer: requireServiceSigner(deps, service),
      timeoutMs: config.SERVICE_CALL_TIMEOUT_MS,
    })
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
        patients: new PatientsClient(client('patients', config.PATIENTS_URL)),
        appointments: new AppointmentsClient(client('appointments', config.APPOINTMENTS_URL)),
        exams: new ClinicalClient(client('clinical', config.CLINICAL_URL)),
        maxBytes: config.DOCUMENTS_MAX_BYTES,
        linkSecret: config.DOCUMENTS_LINK_SECRET,
        links: new CommsLinkSender({
          ...client('comms', config.COMMS_URL),
          secret: config.DOCUMENTS_LINK_SECRET,
          publicBaseUrl: config.PUBLIC_BASE_URL,
          templateTitle: async (ctx, consentId) => {
            const consent = await consents.findById(ctx.auth.companyId, consentId)
            return consent ? (await consents.templateOf(ctx.auth.companyId, consent)).title : ''
          },
        }),
      }),
      stops: [() => expiries.stop()],
    }
  },
)
