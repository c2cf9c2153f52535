import { AppError, causeOf, uuidv7, type Ctx } from '@clinic/platform/core'
import { messageEvent } from '../events/message-events'
import type { Channel, VersionedMessage } from '../schemas/message'
import { smsDestinationProblem } from './destinations'
import { DestinationNotAllowed, MessagingQuotaExceeded } from './errors'
import type { MessageTx } from './message-store'
import type { ResolvedRecipient } from './rules'

/** The messaging limits of DESIGN.md section 12 (COMMS_DAILY_*_LIMIT, COMMS_HOURLY_ADDRESS_LIMIT, COMMS_SMS_COUNTRIES). */
export interface MessagingLimits {
  dailySms: number
  dailyEmail: number
  hourlyPerAddress: number
  /** ISO 3166 alpha-2 codes SMS may go to. */
  smsCountries: readonly string[]
}

/** What became of a message offered to `queueMessage`. */
export type AdmissionOutcome = 'queued' | 'suppressed' | 'quota_exceeded' | 'destination_not_allowed'

/** Where admissions are counted (`comms_messages_admitted_total`); domain code knows no registry. */
export interface AdmissionMetrics {
  admitted(channel: Channel, outcome: AdmissionOutcome): void
}

/** A message to queue: its recipient resolved (`resolveRecipient`), its text rendered. */
export interface QueueMessageInput extends ResolvedRecipient {
  patient: { id: string; codalmacen: string | null; language: string }
  subject: string | null
  body: string
  template: string | null
  appointment_id: string | null
  /** True only when the message goes to a patient who requires a guardian, on purpose. */
  override_guardian: boolean
}

export interface QueuedMessage {
  message: VersionedMessage
  /** The address opted out: the row is `suppressed`, no `comms.message.queued`, nothing will be sent. */
  suppressed: boolean
}

/**
 * Admits one message inside the caller's transaction `tx` (every queued message comes this way:
 * sends and reminders), then writes it with its event:
 * 1. SMS only to valid numbers of `limits.smsCountries`, never premium-rate or shared-cost ones:
 *    else 422 destination_not_allowed.
 * 2. An address that opted out (consent) gets a `suppressed` row and `comms.message.suppressed`:
 *    never sent, counted against no quota.
 * 3. The recipient address's hourly quota, then the company's daily quota of the channel (both
 *    atomic across replicas): else 429 messaging_quota_exceeded with Retry-After.
 * A refusal throws: the caller's transaction rolls back whatever was counted or written, so a refused
 * message leaves nothing behind (and an Idempotency-Key may be used again). `ctx` may be a person's
 * (a send) or the company's own (systemCtx: reminders); it names the actor of the event.
 */
export async function queueMessage(
  ctx: Pick<Ctx, 'auth' | 'requestId' | 'log'>,
  deps: { tx: MessageTx; limits: MessagingLimits; metrics?: AdmissionMetrics },
  m: QueueMessageInput,
): Promise<QueuedMessage> {
  const { tx, limits } = deps
  const count = (outcome: AdmissionOutcome) => deps.metrics?.admitted(m.channel, outcome)
  try {
    if (m.channel === 'sms') {
      const problem = smsDestinationProblem(m.address, limits.smsCountries)
      if (problem) throw new DestinationNotAllowed(problem)
    }
    if (await tx.optedOut(m.channel, m.address)) {
      const message = await write(ctx, tx, m, 'suppressed')
      count('suppressed')
      ctx.log.info(
        { message_id: message.id, channel: m.channel, role: m.role },
        'message suppressed (opted out)',
      )
      return { message, suppressed: true }
    }
    const hourly = await tx.admitToAddress(m.address, limits.hourlyPerAddress)
    if (!hourly.admitted)
      throw new MessagingQuotaExceeded(
        'hourly per recipient',
        limits.hourlyPerAddress,
        hourly.retryAfterSeconds,
      )
    const message = await write(ctx, tx, m, 'queued')
    // Last: the company's counter row stays locked until the commit, so it is taken as late as can be.
    const dailyLimit = m.channel === 'sms' ? limits.dailySms : limits.dailyEmail
    const daily = await tx.admitToday(m.channel, dailyLimit)
    if (!daily.admitted)
      throw new MessagingQuotaExceeded(
        m.channel === 'sms' ? 'daily sms' : 'daily email',
        dailyLimit,
        daily.retryAfterSeconds,
      )
    count('queued')
    ctx.log.info({ message_id: message.id, channel: m.channel, role: m.role }, 'message queued')
    return { message, suppressed: false }
  } catch (err) {
    if (err instanceof DestinationNotAllowed) count('destination_not_allowed')
    else if (err instanceof MessagingQuotaExceeded) {
      count('quota_exceeded')
      ctx.log.info({ channel: m.channel, quota: err.quota }, 'message refused: messaging quota')
    } else if (err instanceof AppError) ctx.log.debug({ code: err.code }, 'message refused')
    throw err
  }
}

/** The row and its admission event, in `tx`. */
async function write(
  ctx: Pick<Ctx, 'auth' | 'requestId'>,
  tx: MessageTx,
  m: QueueMessageInput,
  status: 'queued' | 'suppressed',
): Promise<VersionedMessage> {
  const message = await tx.insert(uuidv7(), {
    patient_id: m.patient.id,
    appointment_id: m.appointment_id,
    codalmacen: m.patient.codalmacen,
    channel: m.channel,
    recipient_role: m.role,
    recipient_name: m.name,
    recipient_address: m.address,
    language: m.patient.language,
    subject: m.subject,
    body: m.body,
    template: m.template,
    override_guardian: m.override_guardian,
    status,
    cause: causeOf(ctx),
  })
  const type = status === 'queued' ? 'comms.message.queued' : 'comms.message.suppressed'
  await tx.publish([messageEvent(type, ctx.auth.companyId, message, { ctx })])
  return message
}
