import { serviceApp, type ServiceDeps, type ServicesOf } from '@clinic/platform'
import { DEFAULT_MAX_BYTES } from './config'
import { ContentRepository } from './db/repositories/content-repository'
import { DocumentsRepository } from './db/repositories/documents-repository'
import type { AppointmentDirectory, ExamDirectory, PatientDirectory } from './domain/directories'
import { documentRoutes } from './routes/documents'
import { ConsentsRepository } from './db/repositories/consents-repository'
import { consentLinkSender } from './domain/send-consent-link'
import { consentRoutes } from './routes/consents'
import { consentPageRoutes } from './routes/consent-page'
import { documentFhirRoutes } from './routes/fhir'
import { renderConsentPdf } from './render/consent-pdf'
import { fileTypeMagic } from './adapters/file-type'

/** knex: connected as the service role (row-level security applies), search_path = documents. */
export interface Deps extends ServiceDeps {
  /** Its typed clients of the services it calls (services.json `calls`: patients, appointments, comms, clinical). */
  services: ServicesOf<'documents'>
  /** DOCUMENTS_MAX_BYTES; default 25 MiB. */
  maxBytes?: number
  /** DOCUMENTS_LINK_SECRET: signs and checks consent links. */
  linkSecret: string
  /** PUBLIC_BASE_URL: consent links are `<it>/p/c/<token>`. */
  publicBaseUrl: string
  /** What time it is for consents and their links (tests move it); default the system clock. */
  clock?: () => Date
}
/** What server.ts serves and tests inject into: the platform's Fastify app with its routes. */
export type App = Awaited<ReturnType<typeof serviceApp>>

/** The documents service: a patient's documents (stored bytes, typed from themselves) and consents. */
export async function buildApp(deps: Deps): Promise<App> {
  const app = await serviceApp(deps, {
    service: 'documents',
    description:
      "A patient's documents (referrals, reports, scans, fundus photographs, OCT exports): uploads typed from their bytes, stored content-addressed per company, downloaded safely; and informed consents asked of the right signer, with their evidence.",
  })
  const content = new ContentRepository(deps.knex)
  const clock = deps.clock ?? (() => new Date())
  // The other services as the domain sees them, over the typed clients: a record of the caller's, or null.
  const { services } = deps
  const patients: PatientDirectory = { find: services.patients.lookUp }
  const appointments: AppointmentDirectory = { find: services.appointments.lookUp }
  const exams: ExamDirectory = { find: services.clinical.lookUpExam }
  const documents = new DocumentsRepository(deps.knex)
  await app.register(documentRoutes, {
    store: documents,
    content,
    patients,
    appointments,
    exams,
    magic: fileTypeMagic,
    maxBytes: deps.maxBytes ?? DEFAULT_MAX_BYTES,
  })
  const consents = {
    store: new ConsentsRepository(deps.knex),
    content,
    patients,
    appointments,
    exams,
    renderPdf: renderConsentPdf,
    clock,
  }
  const links = consentLinkSender({
    store: consents.store,
    messages: services.comms,
    secret: deps.linkSecret,
    publicBaseUrl: deps.publicBaseUrl,
  })
  await app.register(consentRoutes, { ...consents, links })
  await app.register(consentPageRoutes, { ...consents, secret: deps.linkSecret })
  await app.register(documentFhirRoutes, { documents, content, consents: consents.store })
  return app
}
