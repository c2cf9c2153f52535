import { serviceApp, type ServiceDeps } from '@clinic/platform'
import { DEFAULT_MAX_BYTES } from './config'
import { ContentRepository } from './db/repositories/content-repository'
import { DocumentsRepository } from './db/repositories/documents-repository'
import type { AppointmentDirectory, ExamDirectory, PatientDirectory } from './domain/directories'
import { documentRoutes } from './routes/documents'
import { ConsentsRepository } from './db/repositories/consents-repository'
import type { LinkSender } from './domain/consent-links'
import { consentRoutes } from './routes/consents'
import { consentPageRoutes } from './routes/consent-page'
import { companyTransaction } from '@clinic/platform/db'
import { enqueueEvents } from '@clinic/platform/events'

/** knex: connected as the service role (row-level security applies), search_path = documents. */
export interface Deps extends ServiceDeps {
  /** Patients of the caller's company (the patients service, over internal HTTP). */
  patients: PatientDirectory
  /** Appointments of the caller's company (the appointments service, over internal HTTP). */
  appointments: AppointmentDirectory
  /** Exams of the caller's company (the clinical service, over internal HTTP). */
  exams: ExamDirectory
  /** DOCUMENTS_MAX_BYTES; default 25 MiB. */
  maxBytes?: number
  /** Sends a consent's link to its signer (through comms). */
  links: LinkSender
  /** DOCUMENTS_LINK_SECRET: checks consent links. */
  linkSecret: string
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
  await app.register(documentRoutes, {
    store: new DocumentsRepository(deps.knex),
    content,
    patients: deps.patients,
    appointments: deps.appointments,
    exams: deps.exams,
    maxBytes: deps.maxBytes ?? DEFAULT_MAX_BYTES,
  })
  const consents = {
    store: new ConsentsRepository(deps.knex),
    content,
    patients: deps.patients,
    appointments: deps.appointments,
    exams: deps.exams,
    clock,
  }
  await app.register(consentRoutes, { ...consents, links: deps.links })
  await app.register(consentPageRoutes, {
    deps: {
      ...consents,
      secret: deps.linkSecret,
      recordView: (companyId, event) =>
        companyTransaction(deps.knex, companyId, (trx) => enqueueEvents(trx, [event])),
    },
  })
  return app
}
