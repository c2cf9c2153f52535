import { loadConfig, sharedConfig, v } from '@clinic/platform'

/** DESIGN.md section 15: the most one uploaded file may weigh. */
export const DEFAULT_MAX_BYTES = 25 * 1024 * 1024

export const configSpec = {
  ...sharedConfig,
  DOCUMENTS_PORT: v.servicePort('documents'),
  /** The largest file an upload may carry; one byte more is 413 and nothing is kept. */
  DOCUMENTS_MAX_BYTES: v.int({ default: String(DEFAULT_MAX_BYTES), min: 1024, max: 26 * 1024 * 1024 }),
  /** Where the patients service answers `GET /internal/patients/:id` (does the patient exist, who signs?). */
  PATIENTS_URL: v.serviceUrl('patients'),
  /** Where the appointments service answers `GET /internal/appointments/:id`. */
  APPOINTMENTS_URL: v.serviceUrl('appointments'),
  /** Where the clinical service answers `GET /internal/clinical/exams/:id` (whose exam is it?). */
  CLINICAL_URL: v.serviceUrl('clinical'),
  /** Where comms takes a consent link to send (`POST /internal/comms/send`). */
  COMMS_URL: v.serviceUrl('comms'),
  /** The public address of the gateway: consent links are `PUBLIC_BASE_URL/p/c/<token>`. */
  PUBLIC_BASE_URL: v.url({ default: 'http://localhost:8080', protocols: ['http:', 'https:'] }),
  /** Signs consent link tokens (HS256; documents alone makes and checks them). */
  DOCUMENTS_LINK_SECRET: v.string({ min: 32, secret: true }),
  /** How often the expiry worker looks for pending consents past their expiry. */
  CONSENT_EXPIRY_POLL_MS: v.int({ default: '30000', min: 100, max: 3_600_000 }),
}

export const loadDocumentsConfig = (env = process.env) => loadConfig(configSpec, env)
export type DocumentsConfig = ReturnType<typeof loadDocumentsConfig>
