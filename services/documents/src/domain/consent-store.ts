import type { FhirRows, FhirSearch, KeysetAfter, TenantStore, TenantTx } from '@clinic/platform/core'
import type { Consent, ConsentStatus, ConsentTemplate, Evidence, SignerRole } from '../schemas/consent'
import type { DocumentTx } from './document-store'

/** Who asked for a consent, as the consent froze it when it was asked. */
export interface ClinicNames {
  /** The company's name, or null when the request did not carry it (then "the clinic"). */
  name: string | null
  /** The center's name, or null (a consent of no center, or one the request did not name). */
  center: string | null
  /** IANA time zone its times are written in. */
  timeZone: string
}

/**
 * What the consents domain needs from storage (db/repositories/consents-repository.ts): every
 * statement scoped by company under row-level security. A grant's PDF is stored as a document in
 * the same transaction (`documents`).
 */
export interface ConsentStore extends TenantStore<ConsentTx, Consent> {
  list(companyId: number, filter: ConsentFilter): Promise<{ rows: Consent[]; total: number }>
  /** A FHIR search (DESIGN.md section 19): `filter`, then the search's `_id`, `_lastUpdated`, order and cursor. */
  fhirSearch(companyId: number, filter: ConsentFhirFilter, search: FhirSearch): Promise<FhirRows<Consent>>
  listTemplates(
    companyId: number,
    filter: TemplateFilter,
  ): Promise<{ rows: ConsentTemplate[]; total: number }>
  findTemplate(companyId: number, id: string): Promise<ConsentTemplate | null>
  /** The latest version of a key in a language, or null. */
  latestTemplate(companyId: number, key: string, language: string): Promise<ConsentTemplate | null>
  /** A consent's frozen template (version and text as asked), for the page and the PDF. */
  templateOf(companyId: number, consent: Consent): Promise<ConsentTemplate>
  /** Pending consents past `now`, of any company: what the expiry worker expires. */
  due(now: Date, limit: number): Promise<Array<{ companyId: number; id: string }>>
  /** Who asked for a consent (frozen at the request): the PDF, the page and the message name them. */
  clinicOf(companyId: number, consentId: string): Promise<ClinicNames>
  /** The consent a link names (its company from the signed token). */
  linkConsent(companyId: number, id: string): Promise<(Consent & { link_id: string }) | null>
}

export interface NewConsent {
  patient_id: string
  template_id: string
  template_key: string
  language: string
  template_version: number
  text_sha256: string
  signer_role: SignerRole
  expires_at: Date
  appointment_id: string | null
  exam_id: string | null
  codalmacen: string | null
  link_id: string
  clinic_name: string | null
  center_name: string | null
  time_zone: string
}

export interface ConsentChanges {
  status?: ConsentStatus
  evidence?: Evidence
  document_id?: string | null
  withdrawn_at?: Date
  withdrawal_reason?: string
  withdrawal_signer?: string
}

export interface ConsentTx extends TenantTx<Consent> {
  /** The next version of a template key and language (locked against a concurrent one). */
  insertTemplate(
    id: string,
    t: {
      key: string
      language: string
      title: string
      body: string
      text_sha256: string
      codalmacen: string | null
    },
  ): Promise<ConsentTemplate>
  insert(id: string, c: NewConsent): Promise<Consent>
  update(id: string, changes: ConsentChanges): Promise<Consent>
  /** Documents, in this same transaction (a grant's PDF). */
  documents: Pick<DocumentTx, 'insert' | 'content' | 'findById'>
}

export interface ConsentFilter {
  centers: string[] | null
  patientId?: string
  templateKey?: string
  status?: ConsentStatus
  appointmentId?: string
  offset: number
  limit: number
  after?: KeysetAfter
}

export interface TemplateFilter {
  centers: string[] | null
  key?: string
  language?: string
  offset: number
  limit: number
  after?: KeysetAfter
}

/** What a FHIR search of consents asks of the store: each inner list any of, every list must hold. */
export interface ConsentFhirFilter {
  /** null: every center and consents without one (visibleCenters). */
  centers: string[] | null
  patientIds: string[][]
  statuses: ConsentStatus[][]
}
