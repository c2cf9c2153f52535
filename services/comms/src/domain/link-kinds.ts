import { LinkClaim, actOnceClaims, linkKind, type LinkClaims } from '@clinic/platform/core'
import { Type } from '@sinclair/typebox'

/** comms' links (platform `links/tokens.ts`: HS256 under COMMS_LINK_SECRET, which only comms holds). */

/**
 * `PUBLIC_BASE_URL/p/a/<token>`: confirm or cancel one appointment, once, until it starts. `id` is
 * the reminder's: a used one is recorded in link_uses.
 */
export const APPOINTMENT_LINK = linkKind({ purpose: 'appointment', claims: actOnceClaims('appointmentId') })
export type AppointmentLink = LinkClaims<typeof APPOINTMENT_LINK>

/**
 * `PUBLIC_BASE_URL/p/u/<token>`: RFC 8058 one-click unsubscribe from one message's address; never
 * expires. A message id that names no email of the company unsubscribes nothing (the 404 page).
 */
export const UNSUBSCRIBE_LINK = linkKind({
  purpose: 'unsubscribe',
  claims: Type.Object({ companyId: LinkClaim.companyId, messageId: Type.String(), lang: LinkClaim.lang }),
})
export type UnsubscribeLink = LinkClaims<typeof UNSUBSCRIBE_LINK>
