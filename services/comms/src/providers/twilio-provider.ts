import { appendFile, mkdir } from 'node:fs/promises'
import path from 'node:path'
import twilio from 'twilio'
import type { Logger } from 'pino'
import { DeliveryError, type OutgoingMessage, type Provider } from '../domain/deliver-message'
import type { InboundMessageTimes } from '../domain/sms-keywords'

/** Twilio: 429 and 5xx are transient; other 4xx (invalid number, unverified sender...) permanent. */
export function classifyTwilioError(err: unknown): DeliveryError {
  const e = (err ?? {}) as { status?: number; code?: number }
  if (typeof e.status === 'number') {
    const reason = `twilio ${e.status}${e.code ? ` error ${e.code}` : ''}`
    return new DeliveryError(e.status >= 400 && e.status < 500 && e.status !== 429, reason)
  }
  return new DeliveryError(false, 'twilio connection error')
}

export interface TwilioOptions {
  accountSid: string
  authToken: string
  from?: string
  messagingServiceSid?: string
  /** Where Twilio's API is; the real client's requests are sent there instead (tests, sandboxes). */
  apiUrl?: string
  /** Status callbacks (TWILIO_WEBHOOK_URL). */
  statusCallback?: string
}

type RequestOptions = Parameters<InstanceType<typeof twilio.RequestClient>['request']>[0]

/**
 * The real twilio client's transport with the host swapped for `apiUrl`: the client builds,
 * signs and parses everything as in production; only the far end differs.
 */
class RedirectingRequestClient extends twilio.RequestClient {
  constructor(private readonly base: URL) {
    super({ timeout: 10_000 })
  }
  override request<TData>(opts: RequestOptions) {
    const u = new URL(opts.uri)
    u.protocol = this.base.protocol
    u.host = this.base.host
    return super.request<TData>({ ...opts, uri: u.toString() } as never)
  }
}

/** SMS through Twilio's Messages API. */
export class TwilioProvider implements Provider {
  private readonly client: twilio.Twilio
  constructor(private readonly o: TwilioOptions) {
    this.client = twilio(
      o.accountSid,
      o.authToken,
      o.apiUrl ? { httpClient: new RedirectingRequestClient(new URL(o.apiUrl)) } : {},
    )
  }
  async send(m: OutgoingMessage) {
    try {
      const sent = await this.client.messages.create({
        to: m.address,
        body: m.body,
        ...(this.o.messagingServiceSid
          ? { messagingServiceSid: this.o.messagingServiceSid }
          : { from: this.o.from! }),
        ...(this.o.statusCallback ? { statusCallback: this.o.statusCallback } : {}),
      })
      return { providerId: sent.sid }
    } catch (err) {
      throw classifyTwilioError(err)
    }
  }
}

/**
 * When Twilio received an incoming message, from its Messages API (`date_created`, to the second):
 * the order inbound keywords apply in. Null when Twilio does not answer with one (logged: the caller
 * falls back to the arrival time rather than lose a STOP).
 */
export class TwilioMessageTimes implements InboundMessageTimes {
  private readonly client: twilio.Twilio
  constructor(
    o: Pick<TwilioOptions, 'accountSid' | 'authToken' | 'apiUrl'>,
    private readonly log: Pick<Logger, 'warn'>,
  ) {
    // 10 s at most, as for sends: Twilio gives up on the webhook that waits for this at 15 s.
    const httpClient = o.apiUrl
      ? new RedirectingRequestClient(new URL(o.apiUrl))
      : new twilio.RequestClient({ timeout: 10_000 })
    this.client = twilio(o.accountSid, o.authToken, { httpClient })
  }
  async receivedAt(sid: string): Promise<Date | null> {
    try {
      const m = await this.client.messages(sid).fetch()
      return m.dateCreated instanceof Date && !Number.isNaN(m.dateCreated.getTime()) ? m.dateCreated : null
    } catch (err) {
      this.log.warn({ err: classifyTwilioError(err).reason }, 'incoming message not dated by twilio')
      return null
    }
  }
}

/** No Twilio settings: one JSON line per SMS in `dir`/sms.jsonl. */
export class FileSmsProvider implements Provider {
  constructor(private readonly dir: string) {}
  async send(m: OutgoingMessage) {
    await mkdir(this.dir, { recursive: true })
    const line = JSON.stringify({
      id: m.id,
      to: m.address,
      name: m.name,
      body: m.body,
      at: new Date().toISOString(),
    })
    await appendFile(path.join(this.dir, 'sms.jsonl'), `${line}\n`)
    return { providerId: `file:sms.jsonl#${m.id}` }
  }
}
