import { loadConfig, sharedConfig, v } from '@clinic/platform'

export const DEFAULT_HOLD_TTL_SECONDS = 300

export const configSpec = {
  ...sharedConfig,
  APPOINTMENTS_PORT: v.servicePort('appointments'),
  /** Where the patients service answers `GET /internal/patients/:id` (does the patient exist?). */
  PATIENTS_URL: v.serviceUrl('patients'),
  /** How long a hold (POST /appointments/holds) keeps its slot. */
  HOLD_TTL_SECONDS: v.int({ default: String(DEFAULT_HOLD_TTL_SECONDS), min: 10, max: 86_400 }),
}

export const loadAppointmentsConfig = (env = process.env) => loadConfig(configSpec, env)
export type AppointmentsConfig = ReturnType<typeof loadAppointmentsConfig>
