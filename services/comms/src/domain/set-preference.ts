import {
  UUID_PATTERN,
  ValidationFailed,
  keyset,
  keysetPage,
  visibleCenters,
  type Ctx,
  type Page,
} from '@clinic/platform/core'
import { preferenceEvent } from '../events/preference-events'
import { CHANNELS, type Channel } from '../schemas/message'
import type { Preference, PreferenceQuery, PutPreferenceBody } from '../schemas/preference'
import {
  addressErrors,
  channelOf,
  consentAddress,
  preferenceId,
  type PreferenceStore,
  type StoredPreference,
} from './preference-store'

/** A row as the API shows it; an address without one is not opted out, set by nobody. */
function toPreference(
  companyId: number,
  channel: Channel,
  address: string,
  row?: StoredPreference,
): Preference {
  return {
    id: preferenceId(companyId, channel, address),
    channel,
    address,
    opted_out: row?.opted_out ?? false,
    source: row?.source ?? null,
    updated_at: row?.updated_at ?? null,
  }
}

/** The rules of a PUT body the schema cannot express (run with it: one 400 for every field). */
export function putPreferenceErrors(raw: unknown) {
  if (typeof raw !== 'object' || raw === null) return []
  const b = raw as Partial<PutPreferenceBody>
  if (typeof b.address !== 'string' || !CHANNELS.includes(b.channel as Channel)) return []
  return addressErrors(b.channel, b.address)
}

/** By channel: an address has at most one preference per channel. */
const PREFERENCE_KEYSET = keyset({ order: 'asc', columns: [{ name: 'channel', kind: 'text' }] })

/**
 * The company's preferences for an address: on `channel`, else on the channel the address is on
 * by its form (an email address on email, an E.164 number on sms). Every company has its own;
 * a center-limited token sees them too (consent is per company, not per center). A list like every
 * other, paged the same way, although one address has a preference per channel at most.
 */
export function getPreferences(
  ctx: Ctx,
  store: PreferenceStore,
  q: PreferenceQuery,
): Promise<Page<Preference>> {
  const companyId = ctx.auth.companyId
  return keysetPage(q, {
    keyset: PREFERENCE_KEYSET,
    filter: () => {
      visibleCenters(ctx.auth, q.codalmacen)
      const errors = addressErrors(q.channel, q.address)
      if (errors.length) throw new ValidationFailed(errors, 'The query string is not valid')
      return q.channel ? [q.channel] : [channelOf(q.address)!]
    },
    fetch: async (channels, page) => {
      const all = await Promise.all(
        [...channels].sort().map(async (channel) => {
          const address = consentAddress(channel, q.address)
          const [row] = await store.find(companyId, address, [channel])
          return toPreference(companyId, channel, address, row)
        }),
      )
      const after = page.after
      const rest = after ? all.filter((p) => p.channel > after.channel) : all
      return { rows: rest.slice(page.offset, page.offset + page.limit), total: all.length }
    },
  })
}

/**
 * PUT: sets the company's preference (source `api`). A change is written with its
 * `comms.preference.updated` event in one transaction; the same value again writes nothing and
 * answers the preference as it is (its source stays whoever set it).
 */
export async function setPreference(
  ctx: Ctx,
  store: PreferenceStore,
  input: { body: PutPreferenceBody; codalmacen?: string },
): Promise<Preference> {
  visibleCenters(ctx.auth, input.codalmacen)
  const { channel, opted_out } = input.body
  const address = consentAddress(channel, input.body.address)
  const companyId = ctx.auth.companyId
  const row = await store.transaction(companyId, async (tx) => {
    const set = await tx.set({ channel, address, opted_out, source: 'api' })
    if (set.changed) await tx.publish([preferenceEvent(companyId, set.row, { ctx })])
    return set.row
  })
  ctx.log.info(
    { preference_id: preferenceId(companyId, channel, address), channel, opted_out },
    'preference set',
  )
  return toPreference(companyId, channel, address, row)
}

export type UnsubscribeOutcome = 'unsubscribed' | 'not_found'

/**
 * The one-click unsubscribe of an email (RFC 8058; the link's token names the company and the
 * message): the message's address opts out of email in that company (source `email_unsubscribe`,
 * actor `email-unsubscribe`). Again is harmless: already opted out writes nothing.
 */
export async function unsubscribeByLink(
  store: PreferenceStore,
  link: { companyId: number; messageId: string },
  requestId?: string,
): Promise<UnsubscribeOutcome> {
  if (!Number.isSafeInteger(link.companyId) || !new RegExp(UUID_PATTERN).test(String(link.messageId)))
    return 'not_found'
  return store.transaction(link.companyId, async (tx) => {
    const message = await tx.messageAddress(link.messageId)
    if (!message || message.channel !== 'email') return 'not_found'
    const address = consentAddress('email', message.address)
    const set = await tx.set({ channel: 'email', address, opted_out: true, source: 'email_unsubscribe' })
    if (set.changed)
      await tx.publish([preferenceEvent(link.companyId, set.row, { name: 'email-unsubscribe', requestId })])
    return 'unsubscribed'
  })
}

/** Whether the link's message exists (the page before the one click says so, or shows a 404). */
export async function unsubscribeTarget(
  store: PreferenceStore,
  link: { companyId: number; messageId: string },
): Promise<boolean> {
  if (!Number.isSafeInteger(link.companyId) || !new RegExp(UUID_PATTERN).test(String(link.messageId)))
    return false
  return store.transaction(link.companyId, async (tx) => {
    const message = await tx.messageAddress(link.messageId)
    return message?.channel === 'email'
  })
}
