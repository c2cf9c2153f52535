import type { FieldError } from '@clinic/platform/core'
import type { Channel, RecipientRole } from '../schemas/message'
import { GuardianOverrideRequired, GuardianRequired, NoContactAddress } from './errors'
import type { PatientContact } from './directories'
import { normaliseAddress } from './preference-store'

export const EMAIL_BODY_MAX_BYTES = 64 * 1024
export const SMS_BODY_MAX_CHARS = 1600

interface BodyLike {
  channel?: Channel
  subject?: string
  body?: string
  template?: string
  appointment_id?: string
}

/**
 * The rules of a send body that need no stored state, checked with the schema in one 400. The
 * channel may still be unknown (it defaults from the patient): the SMS limit is checked again
 * once it is resolved (`limitErrors`).
 */
export function sendFieldErrors(raw: unknown): FieldError[] {
  if (typeof raw !== 'object' || raw === null) return []
  const b = raw as BodyLike
  const errors: FieldError[] = []
  if (typeof b.subject === 'string' && /[\r\n]/.test(b.subject))
    errors.push({ path: '/subject', message: 'must not contain line breaks (CR or LF)' })
  if (b.subject !== undefined && b.channel === 'sms')
    errors.push({ path: '/subject', message: 'is for email only' })
  if (b.body === undefined && b.template === undefined)
    errors.push({ path: '/body', message: 'is required (unless template is given)' })
  if (b.body !== undefined && b.template !== undefined)
    errors.push({ path: '/template', message: 'cannot be combined with body' })
  if (b.template !== undefined && b.appointment_id === undefined)
    errors.push({ path: '/appointment_id', message: 'is required with template' })
  if (typeof b.body === 'string' && b.channel) errors.push(...limitErrors(b.channel, b.body))
  return errors
}

/** Size limits of a body on its channel (DESIGN: email 64 KiB, SMS 1,600 characters). */
export function limitErrors(channel: Channel, body: string, subject?: string | null): FieldError[] {
  if (channel === 'email' && Buffer.byteLength(body, 'utf8') > EMAIL_BODY_MAX_BYTES)
    return [{ path: '/body', message: 'must be at most 64 KiB for email' }]
  if (channel === 'sms' && [...body].length > SMS_BODY_MAX_CHARS)
    return [{ path: '/body', message: 'must be at most 1,600 characters for sms' }]
  if (channel === 'sms' && subject != null) return [{ path: '/subject', message: 'is for email only' }]
  return []
}

export interface ResolvedRecipient {
  role: RecipientRole
  name: string
  address: string
  channel: Channel
}

const present = (s: string | null | undefined): s is string => typeof s === 'string' && s.trim() !== ''

/**
 * Who a message reaches and over what. Guardian by default when the patient requires a legal
 * guardian, else the patient; the patient of one who requires a guardian only with
 * `overrideGuardian` (guardian_override_required). The channel asked for, else the patient's
 * preferred channel, else the first the recipient has an address for (email, then sms). The
 * address is normalised (`normaliseAddress`).
 */
export function resolveRecipient(
  patient: PatientContact,
  asked: { recipient?: RecipientRole; channel?: Channel; overrideGuardian?: boolean },
): ResolvedRecipient {
  const role: RecipientRole = asked.recipient ?? (patient.requires_legal_guardian ? 'guardian' : 'patient')
  if (role === 'patient' && patient.requires_legal_guardian && asked.overrideGuardian !== true)
    throw new GuardianOverrideRequired()
  let who: { name: string; email: string | null; phone: string | null }
  if (role === 'guardian') {
    if (!patient.guardian || !present(patient.guardian.name)) throw new GuardianRequired()
    who = patient.guardian
  } else
    who = { name: `${patient.first_name} ${patient.last_name}`, email: patient.email, phone: patient.phone }

  const addressOn = (c: Channel) => (c === 'email' ? who.email : who.phone)
  const preferred =
    patient.preferred_channel === 'email' || patient.preferred_channel === 'sms'
      ? patient.preferred_channel
      : undefined
  const channel: Channel =
    asked.channel ?? preferred ?? (present(who.email) ? 'email' : present(who.phone) ? 'sms' : 'email')
  const address = addressOn(channel)
  if (!present(address)) throw new NoContactAddress(role, channel)
  // Normalised here, once: the row, its quota and its consent all see the same address.
  return { role, name: who.name, address: normaliseAddress(channel, address), channel }
}
