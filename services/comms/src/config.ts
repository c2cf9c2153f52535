import { ConfigError, loadConfig, sharedConfig, v, withEventOrigins, type Config } from '@clinic/platform'
import type { MessagingLimits } from './domain/queue-message'

export const configSpec = {
  ...sharedConfig,
  COMMS_PORT: v.servicePort('comms'),
  /** Where the patients service answers `GET /internal/patients/:id` (contact, guardian, language). */
  PATIENTS_URL: v.serviceUrl('patients'),
  /** Where the appointments service answers `GET /internal/appointments/:id` (reminders). */
  APPOINTMENTS_URL: v.serviceUrl('appointments'),
  /**
   * Where messages go: `providers` (SMTP_URL and TWILIO_* must name both; start-up stops otherwise)
   * or `files`, development only (`npm start`): a channel without a provider is written under
   * OUTBOX_DIR instead. A configured provider is always used.
   */
  COMMS_DELIVERY: v.string({ default: 'providers', choices: ['providers', 'files'] }),
  /** smtp(s)://user:pass@host:port; unset (COMMS_DELIVERY=files only): .eml files under OUTBOX_DIR. */
  SMTP_URL: v.url({ optional: true, protocols: ['smtp:', 'smtps:'], secret: true }),
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
  /** Twilio credentials; unset (COMMS_DELIVERY=files only): SMS are appended to OUTBOX_DIR/sms.jsonl. */
  TWILIO_ACCOUNT_SID: v.string({ optional: true }),
  TWILIO_AUTH_TOKEN: v.string({ optional: true, secret: true }),
  TWILIO_FROM: v.string({ optional: true }),
  TWILIO_MESSAGING_SERVICE_SID: v.string({ optional: true }),
  /** Where Twilio's API is (tests and sandboxes point it at a local server). */
  TWILIO_API_URL: v.url({ optional: true, protocols: ['http:', 'https:'] }),
  /** The public URL Twilio posts status callbacks to (the signature covers it). */
  TWILIO_WEBHOOK_URL: v.url({ optional: true, protocols: ['http:', 'https:'] }),
  /** The public URL Twilio posts incoming SMS to (STOP, START...); unset: TWILIO_WEBHOOK_URL + /inbound. */
  TWILIO_INBOUND_WEBHOOK_URL: v.url({ optional: true, protocols: ['http:', 'https:'] }),
  OUTBOX_DIR: v.string({ default: 'var/outbox' }),
  /**
   * Messages the worker delivers at once (each takes a database connection to write its outcome,
   * none while its provider answers); the pool is sized to it.
   */
  DELIVERY_CONCURRENCY: v.int({ default: '16', min: 1, max: 100 }),
  /** Delivery tries per message before `failed` (transient errors only). */
  DELIVERY_MAX_ATTEMPTS: v.int({ default: '5', min: 1, max: 20 }),
  /** First retry delay; doubles per attempt, with jitter, capped at 10 minutes. */
  DELIVERY_RETRY_BASE_MS: v.int({ default: '2000', min: 10, max: 600_000 }),
  /** A message `sending` this long (the worker died mid-send) is marked failed, never resent. */
  SENDING_STALE_MINUTES: v.int({ default: '10', min: 1, max: 1440 }),
  /** Where people open patient links and unsubscribe links: the gateway's public address. */
  PUBLIC_BASE_URL: v.url({ default: 'http://localhost:8080', protocols: ['http:', 'https:'] }),
  /** Signs patient links and unsubscribe links (HMAC-SHA256); 32+ characters; rotating it voids links out. */
  COMMS_LINK_SECRET: v.string({ min: 32, secret: true }),
  /** Reminders the worker sends at once (each looks up its patient and appointment first). */
  REMINDER_CONCURRENCY: v.int({ default: '16', min: 1, max: 100 }),
  /**
   * How long a claimed reminder stays its worker's: one a dead worker held is claimed again after
   * it. Longer than a batch's lookups and transactions; the fault tests shorten it.
   */
  REMINDER_LEASE_MS: v.int({ default: '60000', min: 1000, max: 3_600_000 }),
  /** Messages per company and UTC day, by channel (DESIGN.md section 12). */
  COMMS_DAILY_SMS_LIMIT: v.int({ default: '2000', min: 0, max: 10_000_000 }),
  COMMS_DAILY_EMAIL_LIMIT: v.int({ default: '20000', min: 0, max: 10_000_000 }),
  /** Messages to one recipient address in any hour. */
  COMMS_HOURLY_ADDRESS_LIMIT: v.int({ default: '10', min: 1, max: 10_000 }),
  /** ISO 3166 countries SMS may go to (libphonenumber-js reads the number's country). */
  COMMS_SMS_COUNTRIES: v.list({ default: 'ES,PT,FR,AD,GB,DE,IT' }),
  /**
   * Demos and tests only: a file holding an offset (e.g. `+2d`, `+90m`, `-1h`, or milliseconds)
   * added to the system clock for reminders and links. Refused with NODE_ENV=production.
   */
  COMMS_CLOCK_FILE: v.string({ optional: true }),
}

/** The URL incoming SMS are signed for: TWILIO_INBOUND_WEBHOOK_URL, else TWILIO_WEBHOOK_URL's path + /inbound. */
export function twilioInboundUrl(c: { TWILIO_WEBHOOK_URL?: string; TWILIO_INBOUND_WEBHOOK_URL?: string }) {
  if (c.TWILIO_INBOUND_WEBHOOK_URL || !c.TWILIO_WEBHOOK_URL) return c.TWILIO_INBOUND_WEBHOOK_URL
  const u = new URL(c.TWILIO_WEBHOOK_URL)
  u.pathname = `${u.pathname.replace(/\/+$/, '')}/inbound`
  return u.toString()
}

/** Time an SMTP send may take before nodemailer gives up: connection, greeting, then one silence. */
export const smtpWaitMs = (c: {
  SMTP_CONNECTION_TIMEOUT_MS: number
  SMTP_GREETING_TIMEOUT_MS: number
  SMTP_SOCKET_TIMEOUT_MS: number
}) => c.SMTP_CONNECTION_TIMEOUT_MS + c.SMTP_GREETING_TIMEOUT_MS + c.SMTP_SOCKET_TIMEOUT_MS

type ProviderSettings = Pick<
  Config<typeof configSpec>,
  'SMTP_URL' | 'TWILIO_ACCOUNT_SID' | 'TWILIO_AUTH_TOKEN' | 'TWILIO_FROM' | 'TWILIO_MESSAGING_SERVICE_SID'
>

/** What each channel's provider still lacks: nothing when it is configured (DESIGN.md section 12). */
export function missingProviderVars(c: ProviderSettings): { email: string[]; sms: string[] } {
  const sms = [
    !c.TWILIO_ACCOUNT_SID && 'TWILIO_ACCOUNT_SID',
    !c.TWILIO_AUTH_TOKEN && 'TWILIO_AUTH_TOKEN',
    !c.TWILIO_FROM && !c.TWILIO_MESSAGING_SERVICE_SID && 'TWILIO_FROM',
  ].filter((n): n is string => typeof n === 'string')
  return { email: c.SMTP_URL ? [] : ['SMTP_URL'], sms }
}

/** COMMS_DELIVERY=providers with a channel that has none: one line naming what to set. */
function providerProblem(c: ProviderSettings): string | null {
  const { email, sms } = missingProviderVars(c)
  const missing = [
    email.length && `no email provider (set ${email.join(', ')})`,
    sms.length && `no SMS provider (set ${sms.join(', ')})`,
  ].filter((m): m is string => typeof m === 'string')
  if (!missing.length) return null
  return `Invalid configuration: ${missing.join(' and ')} — or COMMS_DELIVERY=files for development`
}

/** The messaging limits queueMessage applies (DESIGN.md section 12). */
export const messagingLimits = (c: CommsConfig): MessagingLimits => ({
  dailySms: c.COMMS_DAILY_SMS_LIMIT,
  dailyEmail: c.COMMS_DAILY_EMAIL_LIMIT,
  hourlyPerAddress: c.COMMS_HOURLY_ADDRESS_LIMIT,
  smsCountries: c.COMMS_SMS_COUNTRIES.map((country) => country.toUpperCase()),
})

export function loadCommsConfig(env = process.env) {
  const config = loadConfig(configSpec, env)
  const noProvider = config.COMMS_DELIVERY === 'files' ? null : providerProblem(config)
  if (noProvider) throw new ConfigError(noProvider)
  // Half the stale window at most: a send the sweep could take for dead must have ended long before.
  if (config.SMTP_URL && smtpWaitMs(config) * 2 > config.SENDING_STALE_MINUTES * 60_000)
    throw new ConfigError(
      'Invalid configuration: SMTP_CONNECTION_TIMEOUT_MS + SMTP_GREETING_TIMEOUT_MS + SMTP_SOCKET_TIMEOUT_MS must be at most half of SENDING_STALE_MINUTES',
    )
  if (config.COMMS_CLOCK_FILE && env.NODE_ENV === 'production')
    throw new ConfigError('Invalid configuration: COMMS_CLOCK_FILE is for demos and tests, not production')
  return withEventOrigins(config, 'comms')
}
export type CommsConfig = ReturnType<typeof loadCommsConfig>
