import { mkdir, writeFile } from 'node:fs/promises'
import path from 'node:path'
import nodemailer, { type Transporter } from 'nodemailer'
import SMTPPool from 'nodemailer/lib/smtp-pool'
import { DeliveryError, type OutgoingMessage, type Provider } from '../domain/deliver-message'

interface SmtpError {
  code?: string
  responseCode?: number
  command?: string
}

/**
 * SMTP replies: 5xx is permanent (the server refused this message or recipient), 4xx transient
 * (greylisting, mailbox busy, rate limits); no reply at all (connection refused, reset, timeout)
 * is transient too. An address nodemailer cannot use is permanent.
 */
export function classifySmtpError(err: unknown): DeliveryError {
  const e = (err ?? {}) as SmtpError
  if (typeof e.responseCode === 'number') {
    const where = e.command ? ` (${e.command.split(' ')[0]})` : ''
    return new DeliveryError(e.responseCode >= 500, `smtp ${e.responseCode}${where}`)
  }
  if (e.code === 'EENVELOPE') return new DeliveryError(true, 'invalid address')
  return new DeliveryError(false, `smtp connection error${e.code ? ` ${e.code}` : ''}`)
}

const mail = (from: string, m: OutgoingMessage) => ({
  from,
  to: { name: m.name, address: m.address },
  subject: m.subject ?? '',
  text: m.body,
  headers: {
    'X-Clinic-Message-Id': m.id,
    // RFC 8058 one-click unsubscribe: mail clients POST `List-Unsubscribe=One-Click` to the URL.
    ...(m.unsubscribeUrl
      ? {
          'List-Unsubscribe': `<${m.unsubscribeUrl}>`,
          'List-Unsubscribe-Post': 'List-Unsubscribe=One-Click',
        }
      : {}),
  },
})

/** How long nodemailer waits (SMTP_*_TIMEOUT_MS); its own defaults reach 10 minutes. */
export interface SmtpTimeouts {
  connectionMs: number
  greetingMs: number
  socketMs: number
}
export const DEFAULT_SMTP_TIMEOUTS: SmtpTimeouts = {
  connectionMs: 10_000,
  greetingMs: 10_000,
  socketMs: 30_000,
}

/** Email over SMTP with pooled connections (SMTP_URL). */
export class SmtpProvider implements Provider {
  private readonly transport: Transporter
  constructor(
    url: string,
    private readonly from: string,
    maxConnections = 5,
    timeouts: SmtpTimeouts = DEFAULT_SMTP_TIMEOUTS,
  ) {
    // Through SMTPPool itself: createTransport({ url, ...options }) keeps the URL's options only and
    // silently drops the rest (pool, timeouts); SMTPPool merges both.
    this.transport = nodemailer.createTransport(
      new SMTPPool({
        pool: true,
        url,
        maxConnections,
        maxMessages: 1000,
        // A send must end well before the stale sweep would take its message for dead.
        connectionTimeout: timeouts.connectionMs,
        dnsTimeout: timeouts.connectionMs,
        greetingTimeout: timeouts.greetingMs,
        socketTimeout: timeouts.socketMs,
      }),
    )
  }
  async send(m: OutgoingMessage) {
    try {
      const info = await this.transport.sendMail(mail(this.from, m))
      return { providerId: String(info.messageId) }
    } catch (err) {
      throw classifySmtpError(err)
    }
  }
  close() {
    this.transport.close()
  }
}

/** No SMTP_URL: one .eml file per email under `dir` (nodemailer builds the same MIME message). */
export class FileEmailProvider implements Provider {
  private readonly transport = nodemailer.createTransport({
    streamTransport: true,
    buffer: true,
    newline: 'unix',
  })
  constructor(
    private readonly dir: string,
    private readonly from: string,
  ) {}
  async send(m: OutgoingMessage) {
    const info = await this.transport.sendMail(mail(this.from, m))
    await mkdir(this.dir, { recursive: true })
    const file = path.join(this.dir, `${m.id}.eml`)
    await writeFile(file, info.message as Buffer)
    return { providerId: `file:${m.id}.eml` }
  }
}
