import { ConfigError, loadConfig, sharedConfig, v } from '@clinic/platform'

export const configSpec = {
  ...sharedConfig,
  COMMS_PORT: v.port({ default: '8083' }),
  /** Where the patients service answers `GET /internal/patients/:id` (contact, guardian, language). */
  PATIENTS_URL: v.url({ default: 'http://127.0.0.1:8081', protocols: ['http:', 'https:'] }),
  /** Where the appointments service answers `GET /internal/appointments/:id` (reminders). */
  APPOINTMENTS_URL: v.url({ default: 'http://127.0.0.1:8082', protocols: ['http:', 'https:'] }),
  /** How long a send waits for another service before answering 503. */
  UPSTREAM_TIMEOUT_MS: v.int({ default: '2000', min: 100, max: 30_000 }),
  /** smtp(s)://user:pass@host:port; unset: emails are written under OUTBOX_DIR as .eml files. */
  SMTP_URL: v.url({ optional: true, protocols: ['smtp:', 'smtps:'] }),
  SMTP_FROM: v.string({ default: 'Clinic <no-reply@clinic.example>' }),
  SMTP_POOL_SIZE: v.int({ default: '5', min: 1, max: 50 }),
  /**
   * SMTP waits (nodemailer's defaults are 2 min, 30 s and 10 min). A send must end, one way or the
   * other, well inside SENDING_STALE_MINUTES, or the stale sweep fails a message still being sent.
   * The connection timeout bounds the DNS lookup too.
   */
  SMTP_CONNECTION_TIMEOUT_MS: v.int({ default: '10000', min: 100, max: 120_000 }),
  SMTP_GREETING_TIMEOUT_MS: v.int({ default: '10000', min: 100, max: 120_000 }),
  /** Longest silence of the server in the middle of a send. */
  SMTP_SOCKET_TIMEOUT_MS: v.int({ default: '30000', min: 100, max: 300_000 }),
  /** Twilio credentials; unset: SMS are appended to OUTBOX_DIR/sms.jsonl. */
  TWILIO_ACCOUNT_SID: v.string({ optional: true }),
  TWILIO_AUTH_TOKEN: v.string({ optional: true }),
  TWILIO_FROM: v.string({ optional: true }),
  TWILIO_MESSAGING_SERVICE_SID: v.string({ optional: true }),
  /** Where Twilio's API is (tests and sandboxes point it at a local server). */
  TWILIO_API_URL: v.url({ optional: true, protocols: ['http:', 'https:'] }),
  /** The public URL Twilio posts status callbacks to (the signature covers it). */
  TWILIO_WEBHOOK_URL: v.url({ optional: true, protocols: ['http:', 'https:'] }),
  OUTBOX_DIR: v.string({ default: 'var/outbox' }),
  /**
   * Messages the worker delivers at once (each holds a database connection while its provider
   * answers); the pool is sized to it.
   */
  DELIVERY_CONCURRENCY: v.int({ default: '16', min: 1, max: 100 }),
  /** Delivery tries per message before `failed` (transient errors only). */
  DELIVERY_MAX_ATTEMPTS: v.int({ default: '5', min: 1, max: 20 }),
  /** First retry delay; doubles per attempt, with jitter, capped at 10 minutes. */
  DELIVERY_RETRY_BASE_MS: v.int({ default: '2000', min: 10, max: 600_000 }),
  /** A message `sending` this long (the worker died mid-send) is marked failed, never resent. */
  SENDING_STALE_MINUTES: v.int({ default: '10', min: 1, max: 1440 }),
}

/** Time an SMTP send may take before nodemailer gives up: connection, greeting, then one silence. */
export const smtpWaitMs = (c: {
  SMTP_CONNECTION_TIMEOUT_MS: number
  SMTP_GREETING_TIMEOUT_MS: number
  SMTP_SOCKET_TIMEOUT_MS: number
}) => c.SMTP_CONNECTION_TIMEOUT_MS + c.SMTP_GREETING_TIMEOUT_MS + c.SMTP_SOCKET_TIMEOUT_MS

export function loadCommsConfig(env = process.env) {
  const config = loadConfig(configSpec, env)
  // Half the stale window at most: a send the sweep could take for dead must have ended long before.
  if (config.SMTP_URL && smtpWaitMs(config) * 2 > config.SENDING_STALE_MINUTES * 60_000)
    throw new ConfigError(
      'Invalid configuration: SMTP_CONNECTION_TIMEOUT_MS + SMTP_GREETING_TIMEOUT_MS + SMTP_SOCKET_TIMEOUT_MS must be at most half of SENDING_STALE_MINUTES',
    )
  return config
}
export type CommsConfig = ReturnType<typeof loadCommsConfig>
