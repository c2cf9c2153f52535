import {
  startConsumer,
  traceIdOf,
  type Amqp,
  type CloudEvent,
  type Consumer,
  type EventOrigins,
  type Trace,
} from '@clinic/platform'
import { AppError, eventTypes, type Ctx, type EventData } from '@clinic/platform/core'
import { setCompany } from '@clinic/platform/db'
import { Value } from '@sinclair/typebox/value'
import type { Knex } from 'knex'
import type { Logger } from 'pino'
import type { Clock } from '../clock'
import type { PatientDirectory } from '../domain/directories'
import { resolveRecipient } from '../domain/rules'
import { systemCtx } from '../domain/system-ctx'
import type { Channel } from '../schemas/message'
import { offerText } from './offer-text'
import type { QueueOfferMessage } from './queue'

export const WAITLIST_QUEUE = 'comms.waitlist'
/** Who sends offers' messages, on the audit trail (the queued events' actor). */
export const WAITLIST_ACTOR = 'comms-waitlist'

type Offered = EventData<'waitlist.entry.offered'>

export interface OfferMessageDeps {
  log: Logger
  patients: PatientDirectory
  send: QueueOfferMessage
  /** PUBLIC_BASE_URL and COMMS_LINK_SECRET, for the offer's link. */
  links: { baseUrl: string; secret: string }
  /** COMMS_CLOCK_FILE's: an offer already expired by it is not sent (its link would not open). */
  clock: Clock
}

/**
 * Sends each waitlist offer's message (DESIGN.md section 20) from `waitlist.entry.offered`: the
 * appointments service publishes it once the company may message (it asked send-window), so it
 * goes at once. Idempotent: the platform consumer records each event id in the transaction that
 * queues the message.
 */
export function startWaitlistConsumer(
  o: OfferMessageDeps & {
    amqp: Amqp
    knex: Knex
    /** The broker's word for each event's source (server.ts: config.origins); tests of the queue alone leave it out. */
    origins?: EventOrigins
    metrics?: Parameters<typeof startConsumer>[0]['metrics']
    /** WAITLIST_QUEUE unless given (tests: a queue of their own). */
    queue?: string
  },
): Promise<Consumer> {
  return startConsumer({
    amqp: o.amqp,
    knex: o.knex,
    log: o.log,
    queue: o.queue ?? WAITLIST_QUEUE,
    origins: o.origins,
    metrics: o.metrics,
    // Each event holds a database connection while it looks the patient up: offers are few.
    prefetch: 4,
    handle: (event, trx, trace) => applyOfferEvent(o, event, trx, trace),
  })
}

const channelOf = (c: string | null): Channel | undefined => (c === 'email' || c === 'sms' ? c : undefined)

/**
 * One offer's message, to the patient or the guardian the patient requires, on the entry's
 * channel when it names one, queued through the one admission path (consent, quotas, SMS
 * countries) in the consumer's transaction `trx`. What cannot be sent is logged, never retried:
 * the offer then expires unanswered and goes to the next entry (no patient, no address, a refusal
 * of the send path). What may work later is thrown, so the event comes again: the patients service
 * or the database away.
 */
export async function applyOfferEvent(
  o: OfferMessageDeps,
  event: CloudEvent,
  trx: Knex.Transaction,
  trace: Trace = {},
): Promise<void> {
  if (event.type !== 'waitlist.entry.offered') return
  const requestId = event.requestid
  const log = o.log.child({ request_id: requestId, trace_id: traceIdOf(trace.traceparent) })
  if (!Value.Check(eventTypes['waitlist.entry.offered'], event.data))
    return log.error({ event_id: event.id }, 'waitlist offer event not as its contract says; not sent')
  const offer = event.data as Offered
  const ctx = systemCtx(event.idempresa, WAITLIST_ACTOR, {
    log: log.child({ offer_id: offer.offer_id, entry_id: offer.id }),
    requestId,
    ...trace,
  })
  if (o.clock() >= new Date(offer.expires_at))
    return ctx.log.info('waitlist offer expired before its message could go; not sent')
  const patient = await o.patients.find(ctx, offer.patient_id)
  if (!patient) return ctx.log.warn('waitlist offer of a patient that does not exist; not sent')
  const recipient = refusalOf(ctx, () => resolveRecipient(patient, { channel: channelOf(offer.channel) }))
  if (!recipient) return
  const text = await offerText(offer, patient.language, recipient.name, event.idempresa, o.links)
  await setCompany(trx, event.idempresa)
  // A savepoint: a refusal takes back whatever the send path had counted, and the event is done.
  const sent = await refusalOfAsync(ctx, () =>
    trx.transaction((sp) => o.send(sp, ctx, { patient, recipient, text })),
  )
  if (sent)
    ctx.log.info(
      { message_id: sent.id, channel: recipient.channel, role: recipient.role, suppressed: sent.suppressed },
      'waitlist offer message queued',
    )
}

/** What `f` returns, or null when it refuses with a 4xx (logged: the offer just expires unanswered). */
function refusalOf<T>(ctx: Ctx, f: () => T): T | null {
  try {
    return f()
  } catch (err) {
    return refused(ctx, err)
  }
}

async function refusalOfAsync<T>(ctx: Ctx, f: () => Promise<T>): Promise<T | null> {
  try {
    return await f()
  } catch (err) {
    return refused(ctx, err)
  }
}

function refused(ctx: Ctx, err: unknown): null {
  if (!(err instanceof AppError) || err.status >= 500) throw err
  ctx.log.warn({ code: err.code }, 'waitlist offer message refused; not sent (the offer will expire)')
  return null
}
