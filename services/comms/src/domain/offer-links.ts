import { OFFER_ACTIONS, linkCtx, openLink, type Ctx, type OfferAction } from '@clinic/platform/core'
import { offerViewedEvent } from '../events/link-events'
import type { OfferDirectory, OfferInfo } from './directories'
import { WAITLIST_LINK } from './link-kinds'
import { LINK_ACTOR, type LinkRequest, type LinkUseStore } from './patient-links'

/**
 * Waitlist offer links (DESIGN.md section 20): `PUBLIC_BASE_URL/p/w/<token>` from an offer's
 * message, no API token; the signed token names the company, the offer and the page's language,
 * and expires with the offer. The company in the token is the only scope of every lookup, and
 * the actor of every answer is `patient-link`. The appointments service keeps the offer's state:
 * the link is never spent, and an answer to an offer no longer open shows it as it stands.
 */

export interface OfferLinkDeps {
  /** COMMS_LINK_SECRET; without it every link is invalid. */
  secret: string | undefined
  clock: () => Date
  offers: OfferDirectory
  /** The audit trail of views (link-uses-repository: the company's outbox). */
  views: Pick<LinkUseStore, 'recordView'>
}

/** What the page shows (pages/offer-page.ts renders it, and the route's failures). */
export type OfferPage =
  | { kind: 'invalid' }
  | { kind: 'expired' }
  /** No such offer for the token's company, or withdrawn (the entry was cancelled). */
  | { kind: 'not_found' }
  /** Held for the patient: Accept or Decline until `expires_at`. */
  | { kind: 'open'; offer: OfferInfo }
  /** Booked (`appointment_id`). */
  | { kind: 'accepted'; offer: OfferInfo }
  /** The patient said no; the entry stays on the waitlist. */
  | { kind: 'declined'; offer: OfferInfo }
  /** The clinic took the slot meanwhile; the entry stays on the waitlist. */
  | { kind: 'taken'; offer: OfferInfo }

const isOfferAction = (v: unknown): v is OfferAction => OFFER_ACTIONS.includes(v as OfferAction)

/** The page of an offer in its state. */
function pageOf(offer: OfferInfo | null): OfferPage {
  if (!offer || offer.state === 'withdrawn') return { kind: 'not_found' }
  if (offer.state === 'expired') return { kind: 'expired' }
  return { kind: offer.state, offer }
}

/**
 * `GET /p/w/<token>`: the offer and, while it is open, Accept and Decline. It changes nothing (link
 * previews and scanners open links), but every view of a valid link is on the audit trail (actor
 * `patient-link`) before the page is shown: a view that cannot be recorded is not shown (503 page).
 * The appointments service away is thrown too (503 page). An altered or expired token names no
 * company that can be trusted, so its page is only logged.
 */
export async function openOfferLink(deps: OfferLinkDeps, req: LinkRequest): Promise<OfferPage> {
  const checked = await openLink(deps.secret, WAITLIST_LINK, req.token, deps.clock())
  if ('page' in checked) return checked.page
  const { link } = checked
  const ctx = linkCtx(link.companyId, LINK_ACTOR, req)
  const offer = await deps.offers.find(ctx, link.offerId)
  const page = pageOf(offer)
  const view = { offerId: link.offerId, entryId: offer?.entry_id ?? null, page: page.kind }
  await deps.views.recordView(link.companyId, offerViewedEvent(ctx, view))
  return page
}

/**
 * `POST /p/w/<token>` (a form, `action=accept|decline`): the answer, passed on to the appointments
 * service, which books the held slot or releases it to the next entry and puts the answer on the
 * audit trail; the page shows the offer as the answer left it. A double click or a late answer
 * finds it answered already and shows that. The service away is thrown (503 page): nothing is
 * answered, and the same link works later.
 */
export async function answerOfferLink(
  deps: OfferLinkDeps,
  req: LinkRequest & { action: unknown },
): Promise<OfferPage> {
  const checked = await openLink(deps.secret, WAITLIST_LINK, req.token, deps.clock())
  if ('page' in checked) return checked.page
  const { link } = checked
  const action = req.action
  if (!isOfferAction(action)) return { kind: 'invalid' }
  const ctx: Ctx = linkCtx(link.companyId, LINK_ACTOR, req)
  const offer = await deps.offers.answer(ctx, link.offerId, action)
  ctx.log.info(
    { offer_id: link.offerId, action, state: offer?.state ?? 'not_found' },
    'waitlist offer answered',
  )
  return pageOf(offer)
}
