import {
  databaseConfig,
  eventConsumerConfig,
  loadConfig,
  sharedConfig,
  v,
  withEventKeys,
} from '@clinic/platform'

/** The HMAC key of the hash chain: kept outside the database, so an owner cannot re-hash a rewrite. */
const chainKeyConfig = { AUDIT_CHAIN_KEY: v.string({ min: 32 }) }

export const configSpec = {
  ...sharedConfig,
  AUDIT_PORT: v.port({ default: '8084' }),
  /** Events an instance holds at once; it records them in batches of half that. */
  AUDIT_PREFETCH: v.int({ default: '400', min: 2, max: 5000 }),
  ...eventConsumerConfig,
  ...chainKeyConfig,
}

export function loadAuditConfig(env = process.env) {
  return withEventKeys(loadConfig(configSpec, env))
}
export type AuditConfig = ReturnType<typeof loadAuditConfig>

/** The admin CLI needs only the database. */
export const loadAuditDbConfig = (env = process.env) => loadConfig(databaseConfig, env)

/** audit:verify needs the chain key too. */
export const loadAuditVerifyConfig = (env = process.env) =>
  loadConfig({ ...databaseConfig, ...chainKeyConfig }, env)
