import { ConfigError, loadConfig, sharedConfig, v } from '@clinic/platform'

export const DEFAULT_HOLD_TTL_SECONDS = 300
export const DEFAULT_WAITLIST_OFFER_MINUTES = 30

export const configSpec = {
  ...sharedConfig,
  APPOINTMENTS_PORT: v.servicePort('appointments'),
  /** Where the patients service answers `GET /internal/patients/:id` (does the patient exist?). */
  PATIENTS_URL: v.serviceUrl('patients'),
  /** Where comms answers its send window (the end of the company's quiet hours) for waitlist offers. */
  COMMS_URL: v.serviceUrl('comms'),
  /** How long a waitlist offer holds its slot once the patient is told (DESIGN.md section 20). */
  WAITLIST_OFFER_MINUTES: v.int({ default: String(DEFAULT_WAITLIST_OFFER_MINUTES), min: 1, max: 10_080 }),
  /** A file holding an offset for the clock of holds and the waitlist (demos and tests move time). Refused with NODE_ENV=production. */
  APPOINTMENTS_CLOCK_FILE: v.string({ optional: true }),
  /** How long a hold (POST /appointments/holds) keeps its slot. */
  HOLD_TTL_SECONDS: v.int({ default: String(DEFAULT_HOLD_TTL_SECONDS), min: 10, max: 86_400 }),
}

export function loadAppointmentsConfig(env = process.env) {
  const config = loadConfig(configSpec, env)
  if (config.APPOINTMENTS_CLOCK_FILE && env.NODE_ENV === 'production')
    throw new ConfigError(
      'Invalid configuration: APPOINTMENTS_CLOCK_FILE is for demos and tests, not production',
    )
  return config
}
export type AppointmentsConfig = ReturnType<typeof loadAppointmentsConfig>
