import { consentLinkViewed } from '../events/consent-events'
import {
  linkCtx,
  linkOf,
  pageOf,
  recordView,
  type ConsentPage,
  type LinkDeps,
  type LinkRequest,
} from './consent-links'

/** `GET /p/c/<token>`: the exact text to sign, or why not. Every view of a valid link is on the trail first. */
export async function openConsentLink(deps: LinkDeps, req: LinkRequest): Promise<ConsentPage> {
  const checked = await linkOf(deps, req.token)
  if ('page' in checked) return checked.page
  const { link } = checked
  const ctx = linkCtx(link.companyId, req)
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
