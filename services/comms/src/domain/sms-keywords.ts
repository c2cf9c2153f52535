import { preferenceEvent } from '../events/preference-events'
import { E164, type PreferenceStore } from './preference-store'

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
}

/**
 * An inbound SMS, signature already checked: a keyword sets the sender's SMS preference in every
 * company that has written to the number or has a preference for it (source `sms_keyword`), with
 * one `comms.preference.updated` per company changed (actor `sms-keyword`), in one transaction.
 * Anything else, or a sender that is not an E.164 number, changes nothing. Returns the action taken
 * and how many companies changed (never the number: it is not logged).
 */
export async function applySmsKeyword(
  store: PreferenceStore,
  sms: InboundSms,
  requestId?: string,
): Promise<{ action: KeywordAction | null; companies: number }> {
  const action = parseSmsKeyword(sms.Body)
  const from = typeof sms.From === 'string' ? sms.From.trim() : ''
  if (!action || !E164.test(from)) return { action: null, companies: 0 }
  const changed = await store.everywhere(async (tx) => {
    const rows = await tx.setEverywhere({
      channel: 'sms',
      address: from,
      opted_out: action === 'opt_out',
      source: 'sms_keyword',
    })
    await tx.publish(
      rows.map(({ companyId, row }) => preferenceEvent(companyId, row, { name: 'sms-keyword', requestId })),
    )
    return rows.length
  })
  return { action, companies: changed }
}
