import { databaseConfig, loadConfig, sharedConfig, v } from '@clinic/platform'

export const configSpec = {
  ...sharedConfig,
  AUDIT_PORT: v.port({ default: '8084' }),
  AUDIT_PREFETCH: v.int({ default: '32', min: 1, max: 1000 }),
}

export const loadAuditConfig = (env = process.env) => loadConfig(configSpec, env)
export type AuditConfig = ReturnType<typeof loadAuditConfig>

/** The admin CLI needs only the database. */
export const loadAuditDbConfig = (env = process.env) => loadConfig(databaseConfig, env)
