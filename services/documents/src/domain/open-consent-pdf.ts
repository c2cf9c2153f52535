import { linkCtx, openLink } from '@clinic/platform/core'
import { consentLinkViewed } from '../events/consent-events'
import { LINK_ACTOR, recordView, type LinkDeps, type LinkRequest } from './consent-links'
import { CONSENT_PDF_LINK } from './link-kinds'

/** The signed PDF behind a page's link: its bytes and name, or the page saying why not. */
export type ConsentPdf =
  | { kind: 'pdf'; filename: string; size: number; bytes: AsyncIterable<Buffer> }
  | { kind: 'invalid' }
  | { kind: 'expired' }
  | { kind: 'not_found' }

/**
 * `GET /p/c/pdf/<token>`: the signed PDF a grant's page offered, for 24 hours (the token's), while
 * the consent still points to that document. On the trail like a view of the page (`page: pdf`).
 */
export async function openConsentPdf(deps: LinkDeps, req: LinkRequest): Promise<ConsentPdf> {
  const checked = await openLink(deps.secret, CONSENT_PDF_LINK, req.token, deps.clock())
  if ('page' in checked) return checked.page
  const { link } = checked
  const ctx = linkCtx(link.companyId, LINK_ACTOR, req)
  const consent = await deps.store.linkConsent(link.companyId, link.consentId)
  const document =
    consent && consent.document_id === link.documentId
      ? await deps.store.transaction(link.companyId, (tx) => tx.documents.findById(link.documentId))
      : null
  await recordView(
    deps,
    link.companyId,
    consentLinkViewed(ctx, {
      consentId: link.consentId,
      linkId: consent?.link_id ?? link.consentId,
      page: document ? 'pdf' : 'pdf_not_found',
      codalmacen: consent?.codalmacen ?? null,
    }),
  )
  if (!document || document.status !== 'available') return { kind: 'not_found' }
  return {
    kind: 'pdf',
    filename: document.filename,
    size: document.size_bytes,
    bytes: deps.content.read(link.companyId, document.sha256),
  }
}
