import { createHash } from 'node:crypto'
import { parsePhoneNumberFromString } from 'libphonenumber-js/max'
import type { FieldError, OutboxTx } from '@clinic/platform/core'
import type { Channel } from '../schemas/message'
import type { PreferenceSource } from '../schemas/preference'

/** A row of `comms.preferences` as the domain sees it (company aside). */
export interface StoredPreference {
  channel: Channel
  /** Normalised (normaliseAddress): what the row is keyed by. */
  address: string
  opted_out: boolean
  source: PreferenceSource
  updated_at: string
}

export interface PreferenceWrite {
  channel: Channel
  address: string
  opted_out: boolean
  source: PreferenceSource
}

export interface PreferenceTx extends OutboxTx {
  /**
   * Sets the company's preference: the row, and whether it was written (a new row, or `opted_out`
   * changed). An unchanged preference is not written: its `source` and `updated_at` stay those of
   * whoever last changed it. Unless `overridePerson`, a preference the person set themselves
   * (source other than `api`) is not changed either: `refused` then, with the row as it stands.
   * `overrode`: an API write changed what the person had set.
   */
  set(
    p: PreferenceWrite,
    o: { overridePerson: boolean },
  ): Promise<{ row: StoredPreference; changed: boolean; refused: boolean; overrode: boolean }>
  /**
   * Whether the company has messaged this (normalised) address on the channel for a patient of one
   * of `centers`: the addresses a token limited to those centers may see.
   */
  messagedAt(channel: Channel, address: string, centers: readonly string[]): Promise<boolean>
  /** The channel and recipient address of one of the company's messages, or null. */
  messageAddress(messageId: string): Promise<{ channel: Channel; address: string } | null>
}

/** What becomes of an inbound keyword (record_sms_keyword): applied, or why not. */
export type KeywordVerdict = 'apply' | 'duplicate' | 'stale'

export interface InboundKeyword {
  /** Twilio's MessageSid: a message is taken once. */
  sid: string
  /** Normalised (E.164). */
  sender: string
  /** When Twilio received it: a keyword never undoes one Twilio received later. */
  sentAt: Date
  optedOut: boolean
}

export interface EverywhereTx extends OutboxTx {
  /**
   * Records the keyword message, once per sid, and says whether to apply it: not when its sid was
   * taken before, nor when a later keyword of the sender was. Holds the sender's lock to the commit.
   */
  recordKeyword(k: InboundKeyword): Promise<KeywordVerdict>
  /**
   * The preference in every company that has written to the address or has a preference for it
   * (an inbound SMS names a number, not a company): the rows written, with their company.
   */
  setEverywhere(p: PreferenceWrite): Promise<Array<{ companyId: number; row: StoredPreference }>>
}

export interface PreferenceStore {
  /** The company's preferences for this (normalised) address on these channels. */
  find(companyId: number, address: string, channels: readonly Channel[]): Promise<StoredPreference[]>
  /** Whether the company messaged the address on the channel for a patient of `centers` (PreferenceTx). */
  messagedAt(
    companyId: number,
    channel: Channel,
    address: string,
    centers: readonly string[],
  ): Promise<boolean>
  /** One transaction limited to this company (row-level security). */
  transaction<T>(companyId: number, fn: (tx: PreferenceTx) => Promise<T>): Promise<T>
  /** One transaction across companies (SECURITY DEFINER function; inbound SMS keywords only). */
  everywhere<T>(fn: (tx: EverywhereTx) => Promise<T>): Promise<T>
}

export const E164 = /^\+[1-9]\d{6,14}$/
/** The shape ajv-formats' `email` checks (patients validates addresses with it). */
const EMAIL =
  /^[a-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[a-z0-9!#$%&'*+/=?^_`{|}~-]+)*@(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/i

/** The channel an address belongs to by its form: an E.164 number is sms, an email address email. */
export const channelOf = (address: string): Channel | null =>
  E164.test(address.trim()) ? 'sms' : EMAIL.test(address.trim()) ? 'email' : null

/**
 * The one form an address is kept, counted and compared in, everywhere: preferences, the messages'
 * `recipient_address`, the hourly per-recipient limit, the lookups of an inbound SMS keyword.
 * Emails trimmed and lower-cased (mail systems treat them so in practice: `Ana@Example.com` and
 * `ana@example.com` are one person, one quota, one consent); phone numbers as E.164 (`+34 600
 * 111 222` and `+34600111222` are one number). What cannot be parsed as a number is only trimmed
 * (it is refused before it is used).
 */
export function normaliseAddress(channel: Channel, address: string): string {
  const trimmed = address.trim()
  if (channel === 'email') return trimmed.toLowerCase()
  const parsed = parsePhoneNumberFromString(trimmed)
  return parsed ? parsed.number : trimmed
}

/** Why an address cannot be used on `channel` (or on any channel when none is given), if it cannot. */
export function addressErrors(
  channel: Channel | undefined,
  address: string,
  path = '/address',
): FieldError[] {
  const found = channelOf(address)
  if (channel === 'sms' && found !== 'sms')
    return [{ path, message: 'must be an E.164 phone number, e.g. +34600111222' }]
  if (channel === 'email' && found !== 'email') return [{ path, message: 'must be a valid email address' }]
  if (!found) return [{ path, message: 'must be an email address or an E.164 phone number' }]
  return []
}

/** RFC 9562 UUIDv5 namespace of preference ids (a random constant; never change it). */
const NAMESPACE = Buffer.from('6f1c2a8e4b7d4e0f9a3b5c7d1e2f3a4b', 'hex')

/**
 * The stable id of a company's preference for a channel and address, as events and the audit trail
 * name it: UUIDv5 (SHA-1, RFC 9562) of `<company>:<channel>:<normalised address>`. It carries no
 * address, is the same every time (the table has no id column), and differs between companies, so
 * ids never link one person across tenants. It is not secret: whoever can guess an address can
 * compute its id, which tells them nothing the company's own API (GET /comms/preferences) does not.
 */
export function preferenceId(companyId: number, channel: Channel, address: string): string {
  const name = `${companyId}:${channel}:${normaliseAddress(channel, address)}`
  const b = createHash('sha1').update(NAMESPACE).update(name, 'utf8').digest().subarray(0, 16)
  b[6] = 0x50 | (b[6]! & 0x0f)
  b[8] = 0x80 | (b[8]! & 0x3f)
  const h = b.toString('hex')
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`
}
