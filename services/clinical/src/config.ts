import { loadConfig, sharedConfig, v } from '@clinic/platform'

export const configSpec = {
  ...sharedConfig,
  CLINICAL_PORT: v.servicePort('clinical'),
  /** Where the patients service answers `GET /internal/patients/:id` (does the patient exist?). */
  PATIENTS_URL: v.serviceUrl('patients'),
  /** Where the appointments service answers `GET /internal/appointments/:id` (an exam's appointment). */
  APPOINTMENTS_URL: v.serviceUrl('appointments'),
}

export const loadClinicalConfig = (env = process.env) => loadConfig(configSpec, env)
export type ClinicalConfig = ReturnType<typeof loadClinicalConfig>
