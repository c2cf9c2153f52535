import { ConfigError, loadConfig, sharedConfig, v, withEventOrigins } from '@clinic/platform'

export const configSpec = {
  ...sharedConfig,
  WEBHOOKS_PORT: v.servicePort('webhooks'),
  /**
   * Seals the endpoints' signing secrets at rest (AES-256-GCM, key derived from it): the database
   * alone never gives them away. Only this service has it.
   */
  WEBHOOKS_SECRET_KEY: v.string({ min: 32, secret: true }),
  /** Development only: plain http and private, loopback or link-local addresses are allowed. */
  WEBHOOKS_ALLOW_INSECURE: v.bool({ default: 'false' }),
  /** Deliveries in flight at once in this process (each holds a socket, never a database connection). */
  WEBHOOKS_CONCURRENCY: v.int({ default: '64', min: 1, max: 1000 }),
  /** Deliveries in flight at once to one endpoint, across every replica. */
  WEBHOOKS_ENDPOINT_CONCURRENCY: v.int({ default: '4', min: 1, max: 50 }),
  /**
   * Seconds from each failed attempt to the next (DESIGN.md section 10: about 5 s, 5 min, 30 min,
   * 2 h, 5 h, 10 h, 10 h; each with up to 20% jitter). Its length is the number of retries.
   */
  WEBHOOKS_RETRY_SCHEDULE: v.list({ default: '5,300,1800,7200,18000,36000,36000' }),
  /** How long the change feed keeps events (GET /events); an older cursor is 410 cursor_expired. */
  EVENTS_RETENTION_DAYS: v.int({ default: '30', min: 1, max: 3650 }),
}

export function loadWebhooksConfig(env = process.env) {
  const config = loadConfig(configSpec, env)
  const schedule = config.WEBHOOKS_RETRY_SCHEDULE.map(Number)
  if (!schedule.length || schedule.some((s) => !Number.isFinite(s) || s <= 0 || s > 7 * 86_400))
    throw new ConfigError(
      'Invalid configuration: WEBHOOKS_RETRY_SCHEDULE must be a comma list of seconds (each 1 to 604800)',
    )
  return withEventOrigins({ ...config, retrySchedule: schedule.map((s) => s * 1000) }, 'webhooks')
}
export type WebhooksConfig = ReturnType<typeof loadWebhooksConfig>
