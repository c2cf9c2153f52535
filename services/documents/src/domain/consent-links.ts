import { type CloudEvent, type Ctx } from '@clinic/platform/core'
import type { Consent, ConsentTemplate, SignerRole } from '../schemas/consent'
import { nameOf, type ConsentDeps } from './consent-rules'
import type { PatientContact } from './directories'
import type { ClinicNames } from './consent-store'
import type { ConsentLink } from './link-kinds'
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
}

/** Puts a view of a link's page on the audit trail: its event, through the company's outbox. */
export const recordView = (deps: LinkDeps, companyId: number, event: CloudEvent) =>
  deps.store.transaction(companyId, (tx) => tx.publish([event]))

export type LinkRequest = Pick<Ctx, 'log' | 'requestId' | 'traceparent' | 'tracestate'> & { token: string }

/** The consent the link names, if it still is that link's (a link names its consent and link id). */
export async function consentOf(deps: LinkDeps, link: ConsentLink) {
  const consent = await deps.store.linkConsent(link.companyId, link.consentId)
  return consent && consent.link_id === link.id ? consent : null
}

/** Who signs, and on whose behalf: the guardian's name from the patient's record when there is one. */
async function signerOf(deps: LinkDeps, ctx: Ctx, consent: Consent) {
  const patient = await deps.patients.find(ctx, consent.patient_id)
  return { patientName: nameOf(patient), signerName: signerOnFile(patient, consent.signer_role) }
}

export async function pageOf(
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
