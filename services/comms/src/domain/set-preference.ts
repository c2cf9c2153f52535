import {
  UUID_PATTERN,
  ValidationFailed,
  keyset,
  keysetPage,
  NotFound,
  visibleCenters,
  type Ctx,
  type Page,
} from '@clinic/platform/core'
import { preferenceEvent } from '../events/preference-events'
import { PreferenceSetByPerson } from './errors'
import { CHANNELS, type Channel } from '../schemas/message'
import type { Preference, PreferenceQuery, PutPreferenceBody } from '../schemas/preference'
import {
  addressErrors,
  channelOf,
  normaliseAddress,
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
 * by its form (an email address on email, an E.164 number on sms). Every company has its own. A
 * token limited to centers (or a read naming `codalmacen`) sees only the addresses the company has
 * messaged for patients of those centers: the others' consent is not its to read, and the list
 * is empty. A list like every other, paged the same way, although one address has a preference per
 * channel at most.
 */
export function getPreferences(
  ctx: Ctx,
  store: PreferenceStore,
  q: PreferenceQuery,
): Promise<Page<Preference>> {
  const companyId = ctx.auth.companyId
  const centers = visibleCenters(ctx.auth, q.codalmacen)
  return keysetPage(q, {
    keyset: PREFERENCE_KEYSET,
    filter: () => {
      const errors = addressErrors(q.channel, q.address)
      if (errors.length) throw new ValidationFailed(errors, 'The query string is not valid')
      return q.channel ? [q.channel] : [channelOf(q.address)!]
    },
    fetch: async (channels, page) => {
      const all = await Promise.all(
        [...channels].sort().map(async (channel) => {
          const address = normaliseAddress(channel, q.address)
          if (centers && !(await store.messagedAt(companyId, channel, address, centers))) return null
          const [row] = await store.find(companyId, address, [channel])
          return toPreference(companyId, channel, address, row)
        }),
      )
      const seen = all.filter((p): p is Preference => p !== null)
      const after = page.after
      const rest = after ? seen.filter((p) => p.channel > after.channel) : seen
      return { rows: rest.slice(page.offset, page.offset + page.limit), total: seen.length }
    },
  })
}

/**
 * PUT: sets the company's preference (source `api`). A change is written with its
 * `comms.preference.updated` event in one transaction; the same value again writes nothing and
 * answers the preference as it is (its source stays whoever set it). A preference the person set
 * (an SMS keyword, the unsubscribe link) is changed only with `override: true`, which its event
 * carries (else 409 preference_set_by_person). A token limited to centers (or a call naming
 * `codalmacen`) sets only addresses the company has messaged for patients of those centers: any
 * other is 404, as a record of another center is.
 */
export async function setPreference(
  ctx: Ctx,
  store: PreferenceStore,
  input: { body: PutPreferenceBody; codalmacen?: string },
): Promise<Preference> {
  const centers = visibleCenters(ctx.auth, input.codalmacen)
  const { channel, opted_out } = input.body
  const address = normaliseAddress(channel, input.body.address)
  const companyId = ctx.auth.companyId
  const row = await store.transaction(companyId, async (tx) => {
    if (centers && !(await tx.messagedAt(channel, address, centers)))
      throw new NotFound("No patient of the token's centers has been messaged at this address")
    const set = await tx.set(
      { channel, address, opted_out, source: 'api' },
      { overridePerson: input.body.override === true },
    )
    if (set.refused) throw new PreferenceSetByPerson(set.row.source)
    if (set.changed)
      await tx.publish([preferenceEvent(companyId, set.row, { ctx }, { override: set.overrode })])
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
    const address = normaliseAddress('email', message.address)
    // The person's own choice: it may change whatever was set before.
    const set = await tx.set(
      { channel: 'email', address, opted_out: true, source: 'email_unsubscribe' },
      { overridePerson: true },
    )
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
