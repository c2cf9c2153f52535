import {
  ConfigError,
  GATEWAY_ISSUER,
  databaseConfig,
  loadConfig,
  parsePrivateKey,
  serviceList,
  sharedConfig,
  v,
  type AssertionSigner,
  type Config,
} from '@clinic/platform'
import { ROUTED_SERVICES, upstreamEnv, type Upstreams } from './families'
import { trustProxyOf } from './trust-proxy'

export { trustProxyOf }

export const configSpec = {
  ...sharedConfig,
  GATEWAY_PORT: v.servicePort('gateway'),
  /**
   * The Ed25519 private key (base64 PKCS#8 DER) every assertion to a service is signed with; the
   * gateway alone holds it, services its public half (GATEWAY_VERIFY_KEY).
   */
  GATEWAY_SIGNING_KEY: v.string({ secret: true }),
  /** Unset: each gateway counts alone (fine for one replica). Set it when running several. */
  REDIS_URL: v.url({ optional: true, protocols: ['redis:', 'rediss:'], secret: true }),
  RATE_LIMIT_PER_MINUTE: v.int({ default: '600', min: 1 }),
  /** Per client address, before authentication (a clinic behind one NAT shares it). */
  RATE_LIMIT_PER_ADDRESS_PER_MINUTE: v.int({ default: '3000', min: 1 }),
  /**
   * Failed authentications per client address (IPv6 by /64) and minute: over it, credentials that
   * would be refused are 429 instead of 401 (DESIGN.md section 13); valid tokens are still served.
   */
  AUTH_FAILURES_PER_ADDRESS_PER_MINUTE: v.int({ default: '60', min: 1 }),
  CORS_ORIGINS: v.list({ default: '' }),
  /** Where clients reach the gateway: FHIR Bundles' links and fullUrls are absolute under it. */
  PUBLIC_BASE_URL: v.url({ default: 'http://localhost:8080', protocols: ['http:', 'https:'] }),
  /** How long a token check is cached; a revoked token stops working within this time. */
  TOKEN_CACHE_TTL_MS: v.int({ default: '5000', min: 0, max: 60_000 }),
  /**
   * Behind load balancers: `false` (the client is the peer), the number of proxy hops in front of
   * the gateway (`1`), or the proxies' addresses or ranges (`10.0.0.0/8,192.168.1.7`). The client
   * address is then read from X-Forwarded-For that far and no further, so a client cannot choose
   * the address the audit trail records. `true` (trust every hop), more than 5 hops and ranges
   * wider than /8 (IPv4) or /32 (IPv6) are refused (trust-proxy.ts).
   */
  TRUST_PROXY: v.string({ default: 'false' }),
  /** How long a completed Bulk Data export's files are kept (then 404 and removed; DESIGN.md section 19). */
  EXPORT_RETENTION_HOURS: v.int({ default: '24', min: 1, max: 720 }),
  /** Resources an export asks a service for at a time: one chunk of a file, one checkpoint. */
  EXPORT_PAGE_SIZE: v.int({ default: '1000', min: 1, max: 1000 }),
  /** How long an export stays with a gateway that writes nothing: a killed one's is taken up after it. */
  EXPORT_LEASE_SECONDS: v.int({ default: '15', min: 2, max: 600 }),
  /**
   * Runs in a row without a page written (each retried after 1 s, doubled, at most a minute: 20 is
   * about 15 minutes) before an export fails (500 export_failed) instead of being retried forever.
   */
  EXPORT_MAX_FAILURES: v.int({ default: '20', min: 1, max: 1000 }),
  /**
   * Exports this replica runs at once; 0: none (it still takes kick-offs and serves status and
   * files, from the database; the other replicas run them).
   */
  EXPORT_CONCURRENCY: v.int({ default: '1', min: 0, max: 16 }),
  /**
   * Demos and tests only: a file holding an offset (e.g. `+25h`) added to the system clock for the
   * retention of exports. Refused with NODE_ENV=production.
   */
  GATEWAY_CLOCK_FILE: v.string({ optional: true }),
}

/** `<NAME>_URL` for every routed service (PATIENTS_URL ...), default http://127.0.0.1:<port>. */
export const upstreamSpec = Object.fromEntries(
  ROUTED_SERVICES.map((f) => [upstreamEnv(f.service), v.serviceUrl(f.service)]),
)

export type GatewayConfig = Config<typeof configSpec> & {
  readonly upstreams: Upstreams
  readonly trustProxy: false | number | string
  readonly signer: AssertionSigner
}

function signerOf(text: string): AssertionSigner {
  try {
    return { issuer: GATEWAY_ISSUER, key: parsePrivateKey(text, 'GATEWAY_SIGNING_KEY') }
  } catch (err) {
    throw new ConfigError(`Invalid configuration: ${(err as Error).message}`)
  }
}

/** One check of every variable (one message for all problems); `upstreams` by service name. */
export function loadGatewayConfig(env = process.env): GatewayConfig {
  serviceList() // an unusable services.json stops the gateway here, naming its problems (families.ts)
  const all = loadConfig({ ...upstreamSpec, ...configSpec }, env) as Record<string, unknown>
  const upstreams = Object.fromEntries(
    ROUTED_SERVICES.map((f) => [f.service, all[upstreamEnv(f.service)] as string]),
  )
  const trustProxy = trustProxyOf(all.TRUST_PROXY as string)
  if (all.GATEWAY_CLOCK_FILE && env.NODE_ENV === 'production')
    throw new ConfigError('Invalid configuration: GATEWAY_CLOCK_FILE is for demos and tests, not production')
  return Object.freeze({
    ...(all as Config<typeof configSpec>),
    trustProxy,
    signer: signerOf(all.GATEWAY_SIGNING_KEY as string),
    upstreams: Object.freeze(upstreams),
  })
}

/**
 * The admin CLI: the database (the owner's URL) and the longest a token may live, in days, which is
 * also what a token gets without --expires. token:create and token:revoke write their audit events
 * to the gateway's outbox, which the gateway's relay publishes as the gateway's broker user.
 */
export const adminSpec = {
  ...databaseConfig,
  TOKEN_MAX_EXPIRY_DAYS: v.int({ default: '365', min: 1, max: 36_500 }),
}
export const loadAdminConfig = (env = process.env) => loadConfig(adminSpec, env)
