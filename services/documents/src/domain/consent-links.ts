import { signLink, traceOfCause, verifyLink, type CloudEvent, type Ctx } from '@clinic/platform/core'
import { consentLinkViewed } from '../events/consent-events'
import type { Consent, ConsentTemplate, SignerRole } from '../schemas/consent'
import { answerConsent } from './answer-consent'
import { nameOf, type ConsentDeps } from './consents'
import type { PatientContact } from './directories'
import type { ClinicNames } from './consent-store'
import { InvalidTransition } from './errors'
import { CONSENT_LINK, CONSENT_PDF_LINK, PDF_LINK_SECONDS, type ConsentLink } from './link-kinds'
import { signerOnFile } from './signer-name'

/**
 * The consent link page (DESIGN.md section 16): `PUBLIC_BASE_URL/p/c/<token>`, no API token; the
 * signed token names the company, the consent and the page's language, and expires with the
 * consent. It is single use: once the consent is answered (or expired, or withdrawn), the page
 * says so. The company in the token is the only scope of every lookup.
 */

/** The actor of every view and answer through a link (the audit trail shows it). */
export const LINK_ACTOR = 'patient-link'

/** Sends the signer a consent's link (through comms), when asked to. */
export interface LinkSender {
  send(
    ctx: Ctx,
    o: {
      consent: Consent
      linkId: string
      patient: PatientContact
      channel?: 'email' | 'sms'
      /** Who asks: the message names them. */
      clinic: ClinicNames
    },
  ): Promise<void>
}

export type ConsentPage =
  | { kind: 'invalid' }
  | { kind: 'expired' }
  | { kind: 'not_found' }
  /** Answered already (or withdrawn, expired): what it is now. */
  | { kind: 'used'; status: Consent['status'] }
  | ({ kind: 'open' } & OpenPage)
  /** What was answered, for whom and when; after a grant, the signed PDF's link (24 hours). */
  | {
      kind: 'done'
      status: 'granted' | 'refused'
      title: string
      signerRole: SignerRole
      patientName: string
      signerName: string
      answeredAt: string
      clinic: ClinicNames
      pdfUrl: string | null
    }
  /** The form came back without a name to accept with. */
  | ({ kind: 'name_required' } & OpenPage)

/** What the open page shows: the text, who asks, whose behalf, and who is on file to sign. */
export interface OpenPage {
  template: ConsentTemplate
  signerRole: SignerRole
  patientName: string
  signerName: string | null
  clinic: ClinicNames
}

export interface LinkDeps extends ConsentDeps {
  /** DOCUMENTS_LINK_SECRET; without it every link is invalid. */
  secret: string | undefined
  /** Puts a view of a link's page on the audit trail (its event, through the company's outbox). */
  recordView(companyId: number, event: CloudEvent): Promise<void>
}

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

export type LinkRequest = Pick<Ctx, 'log' | 'requestId' | 'traceparent' | 'tracestate'> & { token: string }

export const linkCtx = (
  companyId: number,
  req: Pick<Ctx, 'log' | 'requestId' | 'traceparent' | 'tracestate'>,
): Ctx => ({
  auth: {
    companyId,
    userId: '',
    username: LINK_ACTOR,
    tokenId: '',
    companyCenters: [],
    allowedCenters: null,
  },
  log: req.log.child({ company_id: companyId }),
  requestId: req.requestId,
  ...traceOfCause(req),
})

async function linkOf(deps: LinkDeps, token: string): Promise<{ link: ConsentLink } | { page: ConsentPage }> {
  if (!deps.secret) return { page: { kind: 'invalid' } }
  const verified = await verifyLink(deps.secret, CONSENT_LINK, token, deps.clock())
  if (!verified.ok) return { page: { kind: verified.reason === 'expired' ? 'expired' : 'invalid' } }
  return { link: verified.claims }
}

/** The consent the link names, if it still is that link's (a link names its consent and link id). */
async function consentOf(deps: LinkDeps, link: ConsentLink) {
  const consent = await deps.store.linkConsent(link.companyId, link.consentId)
  return consent && consent.link_id === link.id ? consent : null
}

/** Who signs, and on whose behalf: the guardian's name from the patient's record when there is one. */
async function signerOf(deps: LinkDeps, ctx: Ctx, consent: Consent) {
  const patient = await deps.patients.contact(ctx, consent.patient_id)
  return { patientName: nameOf(patient), signerName: signerOnFile(patient, consent.signer_role) }
}

async function pageOf(
  deps: LinkDeps,
  ctx: Ctx,
  link: ConsentLink,
): Promise<{ page: ConsentPage; consent: Consent | null }> {
  const consent = await consentOf(deps, link)
  if (!consent) return { page: { kind: 'not_found' }, consent }
  if (consent.status !== 'pending') return { page: { kind: 'used', status: consent.status }, consent }
  if (Date.parse(consent.expires_at) <= deps.clock().getTime()) return { page: { kind: 'expired' }, consent }
  const template = await deps.store.templateOf(link.companyId, consent)
  return {
    page: {
      kind: 'open',
      template,
      signerRole: consent.signer_role,
      clinic: await deps.store.clinicOf(link.companyId, consent.id),
      ...(await signerOf(deps, ctx, consent)),
    },
    consent,
  }
}

/** `GET /p/c/<token>`: the exact text to sign, or why not. Every view of a valid link is on the trail first. */
export async function openConsentLink(deps: LinkDeps, req: LinkRequest): Promise<ConsentPage> {
  const checked = await linkOf(deps, req.token)
  if ('page' in checked) return checked.page
  const { link } = checked
  const ctx = linkCtx(link.companyId, req)
  const { page, consent } = await pageOf(deps, ctx, link)
  await deps.recordView(
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

/**
 * `POST /p/c/<token>`: Accept (with the name as typed) or Decline, once. The evidence is the link's:
 * the signer's role, the name typed, when, from which address and browser, and the text hash.
 */
export async function answerConsentLink(
  deps: LinkDeps,
  req: LinkRequest & { answer: unknown; name: unknown; ip: string | null; userAgent: string | null },
): Promise<ConsentPage> {
  const checked = await linkOf(deps, req.token)
  if ('page' in checked) return checked.page
  const { link } = checked
  const ctx = linkCtx(link.companyId, req)
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
  if (!deps.secret) return { kind: 'invalid' }
  const verified = await verifyLink(deps.secret, CONSENT_PDF_LINK, req.token, deps.clock())
  if (!verified.ok) return { kind: verified.reason === 'expired' ? 'expired' : 'invalid' }
  const link = verified.claims
  const ctx = linkCtx(link.companyId, req)
  const consent = await deps.store.linkConsent(link.companyId, link.consentId)
  const document =
    consent && consent.document_id === link.documentId
      ? await deps.store.transaction(link.companyId, (tx) => tx.documents.findById(link.documentId))
      : null
  await deps.recordView(
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
