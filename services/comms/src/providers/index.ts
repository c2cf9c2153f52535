import path from 'node:path'
import type { Logger } from 'pino'
import { ConfigError } from '@clinic/platform'
import { missingProviderVars, type CommsConfig } from '../config'
import type { Provider } from '../domain/deliver-message'
import type { Channel } from '../schemas/message'
import { FileEmailProvider, SmtpProvider } from './smtp-provider'
import { FileSmsProvider, TwilioProvider } from './twilio-provider'

/**
 * The providers the configuration names: a configured one is always used. A channel without one
 * writes files under OUTBOX_DIR, only with COMMS_DELIVERY=files (development); loadCommsConfig has
 * already refused that otherwise, and so does this.
 */
export function providersFrom(c: CommsConfig, log: Logger): Record<Channel, Provider> {
  const dir = path.resolve(c.OUTBOX_DIR)
  const missing = missingProviderVars(c)
  if ((missing.email.length || missing.sms.length) && c.COMMS_DELIVERY !== 'files')
    throw new ConfigError(
      `Invalid configuration: no provider for ${[...missing.email, ...missing.sms].join(', ')} and COMMS_DELIVERY is not files`,
    )
  const email = c.SMTP_URL
    ? new SmtpProvider(c.SMTP_URL, c.SMTP_FROM, c.SMTP_POOL_SIZE, {
        connectionMs: c.SMTP_CONNECTION_TIMEOUT_MS,
        greetingMs: c.SMTP_GREETING_TIMEOUT_MS,
        socketMs: c.SMTP_SOCKET_TIMEOUT_MS,
      })
    : new FileEmailProvider(dir, c.SMTP_FROM)
  const sms = !missing.sms.length
    ? new TwilioProvider({
        accountSid: c.TWILIO_ACCOUNT_SID!,
        authToken: c.TWILIO_AUTH_TOKEN!,
        from: c.TWILIO_FROM,
        messagingServiceSid: c.TWILIO_MESSAGING_SERVICE_SID,
        apiUrl: c.TWILIO_API_URL,
        statusCallback: c.TWILIO_WEBHOOK_URL,
      })
    : new FileSmsProvider(dir)
  const files = [!c.SMTP_URL && 'email (.eml)', missing.sms.length && 'sms (sms.jsonl)'].filter(Boolean)
  if (files.length)
    log.warn(
      { outbox_dir: dir },
      `COMMS_DELIVERY=files: no provider for ${files.join(' and ')}; writing them under ${dir} (development only)`,
    )
  return { email, sms }
}
