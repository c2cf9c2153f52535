import { linkCtx, openLink, signLink } from '@clinic/platform/core'
import { answerConsent } from './answer-consent'
import {
  consentOf,
  pageOf,
  type ConsentPage,
  type LinkDeps,
  type LinkRequest,
  LINK_ACTOR,
} from './consent-links'
import { InvalidTransition } from './errors'
import { CONSENT_LINK, CONSENT_PDF_LINK, PDF_LINK_SECONDS } from './link-kinds'

/** C0 controls and DEL: never part of a name as typed. */
const isControl = (c: string) => c.charCodeAt(0) < 0x20 || c.charCodeAt(0) === 0x7f

/**
 * `POST /p/c/<token>`: Accept (with the name as typed) or Decline, once. The evidence is the link's:
 * the signer's role, the name typed, when, from which address and browser, and the text hash.
 */
export async function answerConsentLink(
  deps: LinkDeps,
  req: LinkRequest & { answer: unknown; name: unknown; ip: string | null; userAgent: string | null },
): Promise<ConsentPage> {
  const checked = await openLink(deps.secret, CONSENT_LINK, req.token, deps.clock())
  if ('page' in checked) return checked.page
  const { link } = checked
  const ctx = linkCtx(link.companyId, LINK_ACTOR, req)
  const { page, consent } = await pageOf(deps, ctx, link)
  if (page.kind !== 'open' || !consent) return page
  const accept = req.answer === 'accept'
  if (!accept && req.answer !== 'decline') return { kind: 'invalid' }
  const typed = typeof req.name === 'string' ? req.name.trim().replace(/\s+/g, ' ') : ''
  // Accepting needs the signer's full name as they type it; declining does not.
  if (accept && (typed.length < 3 || typed.length > 200 || [...typed].some(isControl)))
    return { ...page, kind: 'name_required' }
  try {
    const answered = await answerConsent(
      ctx,
      deps,
      consent.id,
      {
        accept,
        evidence: {
          signer_role: consent.signer_role,
          // Declining needs no name: then none is recorded as typed.
          signer_name: typed,
          method: 'patient_link',
          ip: req.ip,
          user_agent: req.userAgent ? req.userAgent.slice(0, 500) : null,
        },
      },
      { who: async () => ({ patientName: page.patientName, signerOnFile: page.signerName }) },
    )
    const pdfUrl =
      answered.status === 'granted' && answered.document_id
        ? `/p/c/pdf/${await signLink(deps.secret!, CONSENT_PDF_LINK, {
            companyId: link.companyId,
            consentId: answered.id,
            documentId: answered.document_id,
            exp: Math.floor(deps.clock().getTime() / 1000) + PDF_LINK_SECONDS,
          })}`
        : null
    return {
      kind: 'done',
      status: answered.status as 'granted' | 'refused',
      title: page.template.title,
      signerRole: page.signerRole,
      patientName: page.patientName,
      signerName: typed,
      answeredAt: answered.evidence!.signed_at,
      clinic: page.clinic,
      pdfUrl,
    }
  } catch (err) {
    // A double submit: the first answer won; this one shows what it was.
    if (err instanceof InvalidTransition) {
      const now = await consentOf(deps, link)
      return { kind: 'used', status: now?.status ?? 'pending' }
    }
    throw err
  }
}
