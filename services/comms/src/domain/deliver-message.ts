import { causeOf, type CloudEvent, type Ctx } from '@clinic/platform/core'
import { messageEvent } from '../events/message-events'
import type { Channel, Message } from '../schemas/message'

/** What a provider needs to send one message (the row as claimed). */
export interface OutgoingMessage {
  id: string
  channel: Channel
  name: string
  address: string
  subject: string | null
  body: string
  /** Email: the one-click unsubscribe URL (RFC 8058) for List-Unsubscribe; absent: no such headers. */
  unsubscribeUrl?: string
}

/** Email or SMS: nodemailer, twilio, or files under var/outbox/ (adapters in providers/). */
export interface Provider {
  send(m: OutgoingMessage): Promise<{ providerId: string }>
  close?(): Promise<void> | void
}

/**
 * A provider's refusal, classified: `permanent` (invalid address, SMTP 5xx, Twilio 4xx) fails the
 * message at once; otherwise it is retried later. `reason` is stored as last_error: no address,
 * no body, only codes (it also reaches logs).
 */
export class DeliveryError extends Error {
  constructor(
    readonly permanent: boolean,
    readonly reason: string,
  ) {
    super(reason)
  }
}

/** Thrown to have the consumer put the job on its delayed retry queue. */
export class RetryLater extends Error {}

export interface DeliveryStore {
  /** queued -> sending, attempts + 1, committed at once: nobody else sends it after this. */
  claim(companyId: number, id: string): Promise<(Message & { body: string; language?: string }) | null>
  /** sending -> queued with last_error, committed at once (a transient failure). */
  requeue(companyId: number, id: string, error: string): Promise<void>
  /** In the job's transaction (with processed_events): the outcome and its event. */
  finish(
    companyId: number,
    id: string,
    outcome: { providerId: string } | { error: string },
  ): Promise<Message | null>
  /**
   * In the job's transaction, after `finish` recorded an SMS sent: a Twilio receipt for `providerId`
   * that arrived before the sid was recorded, applied now (the message as it became), or null.
   */
  applyEarlyReceipt(providerId: string): Promise<Message | null>
  publish(events: CloudEvent[]): Promise<void>
}

export type Outcome = 'sent' | 'failed' | 'retry' | 'skipped'

/**
 * Sends one queued message at most once. The claim (a conditional UPDATE queued -> sending) commits
 * before the provider is called, so a redelivered job or a second worker finds nothing to claim;
 * if the process dies after the provider accepted, the row stays `sending` and the sweep marks it
 * failed ("outcome unknown"): a patient never gets the same message twice.
 */
export async function deliverMessage(
  ctx: Ctx,
  deps: {
    store: DeliveryStore
    providers: Record<Channel, Provider>
    maxAttempts: number
    /** An email's one-click unsubscribe URL (links/unsubscribe-link.ts), from its company and language. */
    unsubscribeUrl?: (companyId: number, messageId: string, language: string) => string
  },
  /** The message of the queued event; `ctx` is the event's (ctxFromEvent): who queued it. */
  input: { id: string },
): Promise<Outcome> {
  const { store } = deps
  const { log } = ctx
  const companyId = ctx.auth.companyId
  const m = await store.claim(companyId, input.id)
  if (!m) {
    log.debug({ message_id: input.id }, 'message not queued (already claimed or done); nothing to send')
    return 'skipped'
  }
  const attempt = m.attempts
  let outcome: { providerId: string } | { error: string }
  try {
    outcome = await deps.providers[m.channel].send({
      id: m.id,
      channel: m.channel,
      name: m.recipient.name,
      address: m.recipient.address,
      subject: m.subject,
      body: m.body,
      ...(m.channel === 'email' && deps.unsubscribeUrl
        ? { unsubscribeUrl: deps.unsubscribeUrl(companyId, m.id, m.language ?? 'es') }
        : {}),
    })
  } catch (err) {
    const e = err instanceof DeliveryError ? err : new DeliveryError(false, 'provider error')
    if (!e.permanent && attempt < deps.maxAttempts) {
      await store.requeue(companyId, m.id, e.reason)
      log.warn(
        { message_id: m.id, channel: m.channel, attempt, reason: e.reason },
        'delivery failed; will retry',
      )
      return 'retry'
    }
    outcome = { error: e.permanent ? e.reason : `${e.reason} (gave up after ${attempt} attempts)` }
  }
  const done = await store.finish(companyId, m.id, outcome)
  if (!done) {
    // The row left `sending` meanwhile (the stale sweep failed it as "outcome unknown"): that stays
    // the record, and its event was the sweep's.
    log.warn(
      { message_id: m.id, channel: m.channel, attempt },
      'delivery outcome not recorded: the message was no longer sending',
    )
    return 'skipped'
  }
  // The sent or failed event names who queued the message (and their request).
  const event = messageEvent(
    done.status === 'sent' ? 'comms.message.sent' : 'comms.message.failed',
    companyId,
    done,
  )
  Object.assign(event, causeOf(ctx))
  const events = [event]
  if (done.status === 'sent' && done.channel === 'sms' && done.provider_id) {
    // A receipt is Twilio's word, as when it comes through the webhook: no actor.
    const receipt = await store.applyEarlyReceipt(done.provider_id)
    if (receipt) events.push(messageEvent('comms.message.delivered', companyId, receipt))
  }
  await store.publish(events)
  const result = done.status === 'sent' ? 'sent' : 'failed'
  log.info({ message_id: m.id, channel: m.channel, attempt, status: result }, 'delivery finished')
  return result
}
