import path from 'node:path'
import type { Logger } from 'pino'
import type { CommsConfig } from '../config'
import type { Provider } from '../domain/deliver-message'
import type { Channel } from '../schemas/message'
import { FileEmailProvider, SmtpProvider } from './smtp-provider'
import { FileSmsProvider, TwilioProvider } from './twilio-provider'

/** The providers the configuration names; files under OUTBOX_DIR for what it does not. */
export function providersFrom(c: CommsConfig, log: Logger): Record<Channel, Provider> {
  const dir = path.resolve(c.OUTBOX_DIR)
  const email = c.SMTP_URL
    ? new SmtpProvider(c.SMTP_URL, c.SMTP_FROM, c.SMTP_POOL_SIZE, {
        connectionMs: c.SMTP_CONNECTION_TIMEOUT_MS,
        greetingMs: c.SMTP_GREETING_TIMEOUT_MS,
        socketMs: c.SMTP_SOCKET_TIMEOUT_MS,
      })
    : new FileEmailProvider(dir, c.SMTP_FROM)
  const twilioReady =
    c.TWILIO_ACCOUNT_SID && c.TWILIO_AUTH_TOKEN && (c.TWILIO_FROM || c.TWILIO_MESSAGING_SERVICE_SID)
  const sms = twilioReady
    ? new TwilioProvider({
        accountSid: c.TWILIO_ACCOUNT_SID!,
        authToken: c.TWILIO_AUTH_TOKEN!,
        from: c.TWILIO_FROM,
        messagingServiceSid: c.TWILIO_MESSAGING_SERVICE_SID,
        apiUrl: c.TWILIO_API_URL,
        statusCallback: c.TWILIO_WEBHOOK_URL,
      })
    : new FileSmsProvider(dir)
  const files = [!c.SMTP_URL && 'email (.eml)', !twilioReady && 'sms (sms.jsonl)'].filter(Boolean)
  if (files.length)
    log.info(
      { outbox_dir: dir },
      `no provider configured for ${files.join(' and ')}: writing them under ${dir}`,
    )
  return { email, sms }
}
