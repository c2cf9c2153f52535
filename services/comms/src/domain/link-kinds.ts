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

/**
 * `PUBLIC_BASE_URL/p/w/<token>`: one waitlist offer (DESIGN.md section 20), to accept or decline
 * until it expires (`exp`: the offer's `expires_at`). The appointments service keeps the offer's
 * state, so the link is not spent on use: a second answer finds the offer as the first left it.
 */
export const WAITLIST_LINK = linkKind({
  purpose: 'waitlist-offer',
  claims: Type.Object({
    companyId: LinkClaim.companyId,
    offerId: LinkClaim.id,
    lang: LinkClaim.lang,
    exp: LinkClaim.exp,
  }),
})
export type WaitlistLink = LinkClaims<typeof WAITLIST_LINK>
