import { loadConfig, sharedConfig, v } from '@clinic/platform'

export const configSpec = {
  ...sharedConfig,
  APPOINTMENTS_PORT: v.port({ default: '8082' }),
}

export const loadAppointmentsConfig = (env = process.env) => loadConfig(configSpec, env)
export type AppointmentsConfig = ReturnType<typeof loadAppointmentsConfig>
