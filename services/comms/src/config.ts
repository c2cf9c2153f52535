import { loadConfig, sharedConfig, v } from '@clinic/platform'

export const configSpec = {
  ...sharedConfig,
  COMMS_PORT: v.port({ default: '8083' }),
}

export const loadCommsConfig = (env = process.env) => loadConfig(configSpec, env)
export type CommsConfig = ReturnType<typeof loadCommsConfig>
