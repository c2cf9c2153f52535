import { Type } from '@sinclair/typebox'
import { Changes, type ServiceContracts } from './define'

/** Ids, category, type, size and status only: never a title, a file name or the bytes. */
const DocumentIds = {
  id: Type.String(),
  patient_id: Type.String(),
  category: Type.String(),
  content_type: Type.String(),
  size_bytes: Type.Integer(),
  sha256: Type.String(),
  status: Type.String(),
  version: Type.Integer(),
}
/** Ids, template, role and status only: never the text, the signer's name or the evidence. */
const ConsentIds = {
  id: Type.String(),
  patient_id: Type.String(),
  template_key: Type.String(),
  template_version: Type.Integer(),
  text_sha256: Type.String(),
  signer_role: Type.String(),
  status: Type.String(),
  version: Type.Integer(),
  document_id: Type.Union([Type.String(), Type.Null()]),
}

const document = { resource: 'document' } as const
const consent = { resource: 'consent' } as const
const documents = '/documents'
const consents = '/consents'

export default {
  'document.created': {
    ...document,
    data: Type.Object(DocumentIds),
    webhook: { path: documents, when: 'a document is uploaded' },
  },
  'document.updated': {
    ...document,
    data: Type.Object({ ...DocumentIds, changes: Changes }),
    webhook: { path: documents, when: 'the title or category of a document changes' },
  },
  /** Its metadata stays (DESIGN.md section 15); the bytes go once no other document holds them. */
  'document.deleted': {
    ...document,
    data: Type.Object(DocumentIds),
    webhook: { path: documents, when: 'a document is deleted' },
  },
  'consent.requested': {
    ...consent,
    data: Type.Object(ConsentIds),
    webhook: { path: consents, when: 'a consent is asked for' },
  },
  /** `method`: patient_link or in_person. */
  'consent.granted': {
    ...consent,
    data: Type.Object({ ...ConsentIds, method: Type.String() }),
    webhook: { path: consents, when: 'the signer grants it' },
  },
  /** A refusal is kept, and is a failure on the audit trail (the procedure lacks consent). */
  'consent.refused': {
    ...consent,
    data: Type.Object(ConsentIds),
    failure: 'always',
    webhook: { path: consents, when: 'the signer refuses it' },
  },
  'consent.withdrawn': {
    ...consent,
    data: Type.Object(ConsentIds),
    webhook: { path: consents, when: 'a granted consent is withdrawn' },
  },
  'consent.expired': {
    ...consent,
    data: Type.Object(ConsentIds),
    failure: 'always',
    webhook: { path: consents, when: 'a pending consent passed its expiry unanswered' },
  },
  /**
   * A consent link's page was opened (DESIGN.md section 16: on the trail, actor `patient-link`):
   * the consent, the link's id and what the page showed (`open`, `closed`, `used`, `not_found`).
   */
  'consent.link_viewed': {
    ...consent,
    data: Type.Object({ consent_id: Type.String(), link_id: Type.String(), page: Type.String() }),
  },
} satisfies ServiceContracts
