import { loadConfig, sharedConfig, v } from '@clinic/platform'

export const configSpec = {
  ...sharedConfig,
  CLINICAL_PORT: v.servicePort('clinical'),
  /** Where the patients service answers `GET /internal/patients/:id` (does the patient exist?). */
  PATIENTS_URL: v.serviceUrl('patients'),
  /** Where the appointments service answers `GET /internal/appointments/:id` (an exam's appointment). */
  APPOINTMENTS_URL: v.serviceUrl('appointments'),
  /** How long a create waits for those services before answering 503 (as in every caller). */
  SERVICE_CALL_TIMEOUT_MS: v.int({ default: '2000', min: 100, max: 30_000 }),
}

export const loadClinicalConfig = (env = process.env) => loadConfig(configSpec, env)
export type ClinicalConfig = ReturnType<typeof loadClinicalConfig>
