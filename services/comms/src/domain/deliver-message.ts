import type { Cause, CloudEvent, Ctx } from '@clinic/platform/core'
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

/** Who queued a message and in which request (`causeOf` of the send): its sent or failed event names them. */
export type { Cause }

/** A message as claimed for delivery: now `sending`, `attempts` counting this attempt. */
export type ClaimedMessage = Message & { companyId: number; body: string; language: string; cause: Cause }

/** The writes of one finished attempt, in one transaction of the message's company. */
export interface DeliveryTx {
  /** sending -> sent or failed (only while the claim of `attempt` is still the row's). */
  finish(
    id: string,
    attempt: number,
    outcome: { providerId: string } | { error: string },
  ): Promise<Message | null>
  /**
   * After `finish` recorded an SMS sent: a Twilio receipt for `providerId` that arrived before the
   * sid was recorded, applied now (the message as it became), or null.
   */
  applyEarlyReceipt(providerId: string): Promise<Message | null>
  publish(events: CloudEvent[]): Promise<void>
}

export interface DeliveryStore {
  /**
   * Due messages of every company (queued, `next_attempt_at` at or before `now`), at most `limit`:
   * each is `sending` with one more attempt, committed before this returns, so nobody else sends
   * it after this.
   */
  claim(now: Date, limit: number): Promise<ClaimedMessage[]>
  /** sending -> queued with last_error, due again at `retryAt` (a transient failure); false: not ours any more. */
  reschedule(companyId: number, id: string, attempt: number, error: string, retryAt: Date): Promise<boolean>
  /** Runs `work` in one transaction of the company (row-level security), committed when it resolves. */
  transaction<T>(companyId: number, work: (tx: DeliveryTx) => Promise<T>): Promise<T>
  /**
   * Messages left `sending` longer than `staleMinutes` (their worker died between the claim and the
   * outcome) become `failed` "outcome unknown" with their event: never sent again.
   */
  failStale(staleMinutes: number): Promise<Message[]>
}

/** Exponential backoff with full jitter in [d/2, d], capped at 10 minutes. */
export const retryDelay = (base: number, attempt: number, random = Math.random) => {
  const d = Math.min(600_000, base * 2 ** (attempt - 1))
  return Math.round(d / 2 + (random() * d) / 2)
}

export type Outcome = 'sent' | 'failed' | 'retry' | 'skipped'

/**
 * Sends one claimed message, at most once. The claim (queued -> sending) committed before the
 * provider is called, so another worker finds nothing to claim; a transient failure puts the row
 * back, due after a backoff; if the process dies after the provider accepted, the row stays
 * `sending` and is failed "outcome unknown" (`failStale`): a patient never gets a message twice.
 */
export async function deliverMessage(
  ctx: Ctx,
  deps: {
    store: DeliveryStore
    providers: Record<Channel, Provider>
    maxAttempts: number
    /** DELIVERY_RETRY_BASE_MS: the first retry's delay (doubling, with jitter). */
    retryBaseMs: number
    /** What time it is for the next attempt (tests move it). */
    clock: () => Date
    /** An email's one-click unsubscribe URL (links/unsubscribe-link.ts), from its company and language. */
    unsubscribeUrl?: (companyId: number, messageId: string, language: string) => Promise<string>
    random?: () => number
  },
  /** `ctx` is of who queued it (its `cause`). */
  m: ClaimedMessage,
): Promise<Outcome> {
  const { store } = deps
  const { log } = ctx
  const companyId = m.companyId
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
        ? { unsubscribeUrl: await deps.unsubscribeUrl(companyId, m.id, m.language) }
        : {}),
    })
  } catch (err) {
    const e = err instanceof DeliveryError ? err : new DeliveryError(false, 'provider error')
    if (!e.permanent && attempt < deps.maxAttempts) {
      const retryAt = new Date(deps.clock().getTime() + retryDelay(deps.retryBaseMs, attempt, deps.random))
      const kept = await store.reschedule(companyId, m.id, attempt, e.reason, retryAt)
      log.warn(
        { message_id: m.id, channel: m.channel, attempt, reason: e.reason, retry_at: retryAt.toISOString() },
        kept
          ? 'delivery failed; will retry'
          : 'delivery failed; not rescheduled: the message was no longer sending',
      )
      return kept ? 'retry' : 'skipped'
    }
    outcome = { error: e.permanent ? e.reason : `${e.reason} (gave up after ${attempt} attempts)` }
  }
  const done = await record(store, m, outcome)
  if (!done) {
    // The row left `sending` meanwhile (failStale failed it as "outcome unknown"): that stays the
    // record, and its event was the sweep's.
    log.warn(
      { message_id: m.id, channel: m.channel, attempt },
      'delivery outcome not recorded: the message was no longer sending',
    )
    return 'skipped'
  }
  const result = done.status === 'sent' ? 'sent' : 'failed'
  log.info({ message_id: m.id, channel: m.channel, attempt, status: result }, 'delivery finished')
  return result
}

/** The attempt's outcome and its events in one transaction; null when the row had left `sending`. */
function record(
  store: DeliveryStore,
  m: ClaimedMessage,
  outcome: { providerId: string } | { error: string },
): Promise<Message | null> {
  return store.transaction(m.companyId, async (tx) => {
    const row = await tx.finish(m.id, m.attempts, outcome)
    if (!row) return null
    // The sent or failed event names who queued the message (and their request).
    const event = messageEvent(
      row.status === 'sent' ? 'comms.message.sent' : 'comms.message.failed',
      m.companyId,
      row,
    )
    Object.assign(event, m.cause)
    const events = [event]
    if (row.status === 'sent' && row.channel === 'sms' && row.provider_id) {
      // A receipt is Twilio's word, as when it comes through the webhook: no actor.
      const receipt = await tx.applyEarlyReceipt(row.provider_id)
      if (receipt) events.push(messageEvent('comms.message.delivered', m.companyId, receipt))
    }
    await tx.publish(events)
    return row
  })
}
