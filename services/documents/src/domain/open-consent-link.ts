import { linkCtx, openLink } from '@clinic/platform/core'
import { CONSENT_LINK } from './link-kinds'
import { consentLinkViewed } from '../events/consent-events'
import {
  pageOf,
  recordView,
  type ConsentPage,
  type LinkDeps,
  type LinkRequest,
  LINK_ACTOR,
} from './consent-links'

/** `GET /p/c/<token>`: the exact text to sign, or why not. Every view of a valid link is on the trail first. */
export async function openConsentLink(deps: LinkDeps, req: LinkRequest): Promise<ConsentPage> {
  const checked = await openLink(deps.secret, CONSENT_LINK, req.token, deps.clock())
  if ('page' in checked) return checked.page
  const { link } = checked
  const ctx = linkCtx(link.companyId, LINK_ACTOR, req)
  const { page, consent } = await pageOf(deps, ctx, link)
  await recordView(
    deps,
    link.companyId,
    consentLinkViewed(ctx, {
      consentId: link.consentId,
      linkId: link.id,
      page: page.kind,
      codalmacen: consent?.codalmacen ?? null,
    }),
  )
  return page
}
