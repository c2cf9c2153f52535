import {
  ConfigError,
  databaseConfig,
  eventKeysBySource,
  loadConfig,
  sharedConfig,
  v,
  type EventKeys,
} from '@clinic/platform'

/** The HMAC key of the hash chain: kept outside the database, so an owner cannot re-hash a rewrite. */
const chainKeyConfig = { AUDIT_CHAIN_KEY: v.string({ min: 32 }) }

export const configSpec = {
  ...sharedConfig,
  AUDIT_PORT: v.port({ default: '8084' }),
  /** Events an instance holds at once; it records them in batches of half that. */
  AUDIT_PREFETCH: v.int({ default: '400', min: 2, max: 5000 }),
  /**
   * Each emitting service's key, `<service>=<its EVENT_SIGNING_SECRET>`, comma-separated: an event is
   * checked with its source's key, so a service cannot sign as another. Unset: one key for all,
   * EVENT_SIGNING_SECRET.
   */
  EVENT_VERIFY_KEYS: v.list({ optional: true }),
  ...chainKeyConfig,
}

export function loadAuditConfig(env = process.env) {
  const config = loadConfig(configSpec, env)
  let eventKeys: EventKeys = config.EVENT_SIGNING_SECRET
  try {
    if (config.EVENT_VERIFY_KEYS) eventKeys = eventKeysBySource(config.EVENT_VERIFY_KEYS)
  } catch (err) {
    throw new ConfigError(`Invalid configuration: ${(err as Error).message}`)
  }
  return Object.freeze({ ...config, eventKeys })
}
export type AuditConfig = ReturnType<typeof loadAuditConfig>

/** The admin CLI needs only the database. */
export const loadAuditDbConfig = (env = process.env) => loadConfig(databaseConfig, env)

/** audit:verify needs the chain key too. */
export const loadAuditVerifyConfig = (env = process.env) =>
  loadConfig({ ...databaseConfig, ...chainKeyConfig }, env)
