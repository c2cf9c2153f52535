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

/**
 * C0 controls, DEL and C1 controls: never part of a name as typed (the in-person grant's name
 * refuses the same, SINGLE_LINE).
 */
const isControl = (c: string) => {
  const code = c.charCodeAt(0)
  return code < 0x20 || (code >= 0x7f && code <= 0x9f)
}

/**
 * The name as typed, spaces collapsed, if it can stand in the evidence: at most 200 characters and
 * no control character; else null.
 */
function typedName(name: unknown): string | null {
  const typed = typeof name === 'string' ? name.trim().replace(/\s+/g, ' ') : ''
  return typed.length > 200 || [...typed].some(isControl) ? null : typed
}

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
  const name = typedName(req.name)
  // Accepting needs the signer's full name as they type it; declining needs none, and keeps the
  // name typed only when it can stand in the evidence (typedName), else none.
  if (accept && (name === null || name.length < 3)) return { ...page, kind: 'name_required' }
  const typed = name ?? ''
  try {
    const answered = await answerConsent(
      ctx,
      deps,
      consent.id,
      {
        accept,
        evidence: {
          signer_role: consent.signer_role,
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
    // A double submit: the first answer won; this one shows what it was. Still pending: it expired
    // while this answer was on its way.
    if (err instanceof InvalidTransition) {
      const now = await consentOf(deps, link)
      if (!now) return { kind: 'not_found' }
      return now.status === 'pending' ? { kind: 'expired' } : { kind: 'used', status: now.status }
    }
    throw err
  }
}
