import { databaseConfig, loadConfig, sharedConfig, v } from '@clinic/platform'

const upstream = (port: number) =>
  v.url({ default: `http://127.0.0.1:${port}`, protocols: ['http:', 'https:'] })

export const configSpec = {
  ...sharedConfig,
  GATEWAY_PORT: v.port({ default: '8080' }),
  PATIENTS_URL: upstream(8081),
  APPOINTMENTS_URL: upstream(8082),
  COMMS_URL: upstream(8083),
  AUDIT_URL: upstream(8084),
  /** Unset: each gateway counts alone (fine for one replica). Set it when running several. */
  REDIS_URL: v.url({ optional: true, protocols: ['redis:', 'rediss:'] }),
  RATE_LIMIT_PER_MINUTE: v.int({ default: '600', min: 1 }),
  CORS_ORIGINS: v.list({ default: '' }),
  /** How long a token check is cached; a revoked token stops working within this time. */
  TOKEN_CACHE_TTL_MS: v.int({ default: '5000', min: 0, max: 60_000 }),
  /** Behind a load balancer: take the client ip from X-Forwarded-For. */
  TRUST_PROXY: v.bool({ default: 'false' }),
}

export const loadGatewayConfig = (env = process.env) => loadConfig(configSpec, env)
export type GatewayConfig = ReturnType<typeof loadGatewayConfig>

/** The admin CLI only needs the database. */
export const loadAdminConfig = (env = process.env) => loadConfig(databaseConfig, env)
