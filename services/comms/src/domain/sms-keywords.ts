import { preferenceEvent } from '../events/preference-events'
import { E164, normaliseAddress, type PreferenceStore } from './preference-store'

/**
 * Keywords of an inbound SMS (DESIGN.md section 12), matched on the whole message: any case,
 * surrounding spaces and punctuation ignored ("Stop.", " baja ", "¡ALTA!"). Besides DESIGN's list,
 * Twilio's own opt-out words (STOPALL, CANCEL, END, QUIT, OPTOUT, REVOKE) and UNSTOP: where
 * Twilio's opt-out handling is on, it blocks or unblocks the number on these by itself, and our
 * record should say what the carrier does. Twilio's opt-in `YES` is left out on purpose: a patient's
 * "yes" answers a reminder, it is not a consent decision (staying opted out is the safe side).
 */
export const OPT_OUT_KEYWORDS = [
  'STOP',
  'BAJA',
  'CANCELAR',
  'UNSUBSCRIBE',
  'STOPALL',
  'CANCEL',
  'END',
  'QUIT',
  'OPTOUT',
  'REVOKE',
] as const
export const OPT_IN_KEYWORDS = ['START', 'ALTA', 'UNSTOP'] as const

export type KeywordAction = 'opt_out' | 'opt_in'

/** What an inbound SMS body asks for, or null for anything else (a reply, a question). */
export function parseSmsKeyword(body: unknown): KeywordAction | null {
  if (typeof body !== 'string' || body.length > 64) return null
  const word = body
    .normalize('NFKC')
    .replace(/^[\s\p{P}]+|[\s\p{P}]+$/gu, '')
    .toUpperCase()
  if ((OPT_OUT_KEYWORDS as readonly string[]).includes(word)) return 'opt_out'
  if ((OPT_IN_KEYWORDS as readonly string[]).includes(word)) return 'opt_in'
  return null
}

export interface InboundSms {
  From?: string
  Body?: string
  MessageSid?: string
}

/** Twilio's message sids: SM (SMS) or MM (MMS) and 32 hex digits. */
const MESSAGE_SID = /^(SM|MM)[0-9a-f]{32}$/

/** When Twilio received an inbound message, by its sid (its Messages API), or null if it cannot say. */
export interface InboundMessageTimes {
  receivedAt(sid: string): Promise<Date | null>
}

export interface KeywordDeps {
  store: PreferenceStore
  /** Twilio's word on when each message came in; absent (no Twilio API configured): arrival order. */
  times?: InboundMessageTimes
  /** The service's clock: the instant of a message Twilio cannot date. */
  clock: () => Date
}

export type KeywordOutcome = {
  action: KeywordAction | null
  companies: number
  /** Why a keyword changed nothing: its sid was taken before, or a later keyword of the sender was. */
  ignored?: 'duplicate' | 'stale'
}

/**
 * An inbound SMS, signature already checked: a keyword sets the sender's SMS preference in every
 * company that has written to the number or has a preference for it (source `sms_keyword`), with
 * one `comms.preference.updated` per company changed (actor `sms-keyword`), in one transaction.
 * Each message is taken once (by MessageSid: a replayed request, however well signed, changes
 * nothing) and in the order Twilio received them: a keyword older than one already taken (a late
 * delivery, a replay of a message never seen) is recorded and not applied, so `START` sent before a
 * `STOP` never undoes it. Twilio's Messages API dates the message; when it cannot (not configured,
 * or it fails), the arrival time does. Anything else, a sender that is not an E.164 number or a
 * message without a sid changes nothing. Returns what was done (never the number: it is not logged).
 */
export async function applySmsKeyword(
  deps: KeywordDeps,
  sms: InboundSms,
  requestId?: string,
): Promise<KeywordOutcome> {
  const action = parseSmsKeyword(sms.Body)
  const from = typeof sms.From === 'string' ? sms.From.trim() : ''
  const sid = typeof sms.MessageSid === 'string' ? sms.MessageSid : ''
  if (!action || !E164.test(from) || !MESSAGE_SID.test(sid)) return { action: null, companies: 0 }
  const sender = normaliseAddress('sms', from)
  const sentAt = (await deps.times?.receivedAt(sid).catch(() => null)) ?? deps.clock()
  return deps.store.everywhere(async (tx) => {
    const verdict = await tx.recordKeyword({ sid, sender, sentAt, optedOut: action === 'opt_out' })
    if (verdict !== 'apply') return { action, companies: 0, ignored: verdict }
    const rows = await tx.setEverywhere({
      channel: 'sms',
      address: sender,
      opted_out: action === 'opt_out',
      source: 'sms_keyword',
    })
    await tx.publish(
      rows.map(({ companyId, row }) => preferenceEvent(companyId, row, { name: 'sms-keyword', requestId })),
    )
    return { action, companies: rows.length }
  })
}
