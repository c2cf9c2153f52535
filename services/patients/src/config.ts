import { loadConfig, sharedConfig, v } from '@clinic/platform'

export const configSpec = {
  ...sharedConfig,
  PATIENTS_PORT: v.servicePort('patients'),
}

export const loadPatientsConfig = (env = process.env) => loadConfig(configSpec, env)
export type PatientsConfig = ReturnType<typeof loadPatientsConfig>
