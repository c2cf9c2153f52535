import { LinkClaim, actOnceClaims, linkKind, type LinkClaims } from '@clinic/platform/core'
import { Type } from '@sinclair/typebox'

/**
 * Documents' links (platform `links/tokens.ts`: HS256 under DOCUMENTS_LINK_SECRET, which only
 * documents holds). Each keeps the `typ` its first links were made with, so every link already sent
 * opens until it expires.
 */

/** `PUBLIC_BASE_URL/p/c/<token>`: a consent's page, expiring with the consent; `id` is its link_id. */
export const CONSENT_LINK = linkKind({
  purpose: 'consent',
  typ: 'clinic-consent-link+jwt',
  claims: actOnceClaims('consentId'),
})
export type ConsentLink = LinkClaims<typeof CONSENT_LINK>

/** `/p/c/pdf/<token>`: the signed PDF the page offers after a grant, for PDF_LINK_SECONDS. */
export const CONSENT_PDF_LINK = linkKind({
  purpose: 'consent-pdf',
  typ: 'clinic-consent-pdf+jwt',
  claims: Type.Object({
    companyId: LinkClaim.companyId,
    consentId: LinkClaim.id,
    documentId: LinkClaim.id,
    exp: LinkClaim.exp,
  }),
})
/** How long the page after a grant offers the signed PDF. */
export const PDF_LINK_SECONDS = 24 * 3600
