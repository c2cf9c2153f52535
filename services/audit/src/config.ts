import { databaseConfig, loadConfig, sharedConfig, v, withEventOrigins } from '@clinic/platform'

/** The HMAC key of the hash chain: kept outside the database, so an owner cannot re-hash a rewrite. */
const chainKeyConfig = { AUDIT_CHAIN_KEY: v.string({ min: 32, secret: true }) }

/**
 * Where signed checkpoints of every company's chain head are appended (one JSON line each), so
 * that a tail cut by the database owner shows in audit:verify. Relative to the working directory;
 * in production a volume or mount outside the database host, ideally append-only (WORM) storage.
 */
const checkpointFileConfig = {
  AUDIT_CHECKPOINT_FILE: v.string({ default: 'var/audit-checkpoints.jsonl' }),
}

export const configSpec = {
  ...sharedConfig,
  AUDIT_PORT: v.servicePort('audit'),
  /** Events an instance holds at once; it records them in batches of half that. */
  AUDIT_PREFETCH: v.int({ default: '400', min: 2, max: 5000 }),
  ...chainKeyConfig,
  ...checkpointFileConfig,
  /** How often the service writes a checkpoint (and once more on shutdown). */
  AUDIT_CHECKPOINT_INTERVAL_SECONDS: v.int({ default: '300', min: 1, max: 86_400 }),
}

export function loadAuditConfig(env = process.env) {
  return withEventOrigins(loadConfig(configSpec, env), 'audit')
}
export type AuditConfig = ReturnType<typeof loadAuditConfig>

/** The admin CLI needs only the database. */
export const loadAuditDbConfig = (env = process.env) => loadConfig(databaseConfig, env)

/** audit:verify needs the chain key too, and the checkpoints it holds the chain against. */
export const loadAuditVerifyConfig = (env = process.env) =>
  loadConfig({ ...databaseConfig, ...chainKeyConfig, ...checkpointFileConfig }, env)
