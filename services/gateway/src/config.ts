import { ConfigError, databaseConfig, loadConfig, sharedConfig, v, type Config } from '@clinic/platform'
import { ROUTED_SERVICES, upstreamEnv, type Upstreams } from './families'

export const configSpec = {
  ...sharedConfig,
  GATEWAY_PORT: v.port({ default: '8080' }),
  /** Unset: each gateway counts alone (fine for one replica). Set it when running several. */
  REDIS_URL: v.url({ optional: true, protocols: ['redis:', 'rediss:'] }),
  RATE_LIMIT_PER_MINUTE: v.int({ default: '600', min: 1 }),
  /** Per client address, before authentication (a clinic behind one NAT shares it). */
  RATE_LIMIT_PER_ADDRESS_PER_MINUTE: v.int({ default: '3000', min: 1 }),
  CORS_ORIGINS: v.list({ default: '' }),
  /** How long a token check is cached; a revoked token stops working within this time. */
  TOKEN_CACHE_TTL_MS: v.int({ default: '5000', min: 0, max: 60_000 }),
  /**
   * Behind load balancers: `false` (the client is the peer), the number of proxy hops in front of
   * the gateway (`1`), or the proxies' addresses or ranges (`10.0.0.0/8,192.168.1.7`). The client
   * address is then read from X-Forwarded-For that far and no further, so a client cannot choose
   * the address the audit trail records. `true` (trust every hop) is refused.
   */
  TRUST_PROXY: v.string({ default: 'false' }),
}

/** TRUST_PROXY as Fastify's trustProxy: false, a hop count, or a list of addresses and ranges. */
export function trustProxyOf(raw: string): false | number | string {
  const value = raw.trim()
  if (value === 'false' || value === '0') return false
  if (/^\d{1,2}$/.test(value)) return Number(value)
  const parts = value.split(',').map((p) => p.trim())
  const address = /^([0-9]{1,3}(\.[0-9]{1,3}){3}|[0-9a-f:]*:[0-9a-f:.]*)(\/\d{1,3})?$/i
  if (value !== '' && parts.every((p) => address.test(p))) return parts.join(',')
  throw new ConfigError(
    `TRUST_PROXY must be false, a number of proxy hops (1) or proxy addresses/ranges (10.0.0.0/8), not "${raw}"`,
  )
}

/** `<NAME>_URL` for every routed service (PATIENTS_URL ...), default http://127.0.0.1:<port>. */
export const upstreamSpec = Object.fromEntries(
  ROUTED_SERVICES.map((f) => [
    upstreamEnv(f.service),
    v.url({ default: `http://127.0.0.1:${f.port}`, protocols: ['http:', 'https:'] }),
  ]),
)

export type GatewayConfig = Config<typeof configSpec> & {
  readonly upstreams: Upstreams
  readonly trustProxy: false | number | string
}

/** One check of every variable (one message for all problems); `upstreams` by service name. */
export function loadGatewayConfig(env = process.env): GatewayConfig {
  const all = loadConfig({ ...upstreamSpec, ...configSpec }, env) as Record<string, unknown>
  const upstreams = Object.fromEntries(
    ROUTED_SERVICES.map((f) => [f.service, all[upstreamEnv(f.service)] as string]),
  )
  const trustProxy = trustProxyOf(all.TRUST_PROXY as string)
  return Object.freeze({
    ...(all as Config<typeof configSpec>),
    trustProxy,
    upstreams: Object.freeze(upstreams),
  })
}

/** The admin CLI only needs the database. */
export const loadAdminConfig = (env = process.env) => loadConfig(databaseConfig, env)
