import type {
  FhirRows,
  DateBound,
  FhirSearch,
  KeysetAfter,
  TenantStore,
  TenantTx,
} from '@clinic/platform/core'
import type { Category, Document, DocumentStatus } from '../schemas/document'
import type { ContentTx } from './content-store'

/**
 * What the documents domain needs from storage. The implementation
 * (db/repositories/documents-repository.ts) scopes every statement by company, under row-level
 * security; the bytes are behind ContentStore (content-store.ts).
 */
export interface DocumentStore extends TenantStore<DocumentTx, Document> {
  list(companyId: number, filter: DocumentFilter): Promise<{ rows: Document[]; total: number }>
  /** A FHIR search (DESIGN.md section 19): `filter`, then the search's `_id`, `_lastUpdated`, order and cursor. */
  fhirSearch(companyId: number, filter: DocumentFhirFilter, search: FhirSearch): Promise<FhirRows<Document>>
}

/** A new document's stored fields (the rest is set by the store: times, version, status). */
export type NewDocument = Omit<Document, 'id' | 'status' | 'created_at' | 'updated_at' | 'version'>

export interface DocumentTx extends TenantTx<Document> {
  insert(id: string, fields: NewDocument): Promise<Document>
  /** Writes these fields, bumps version and updated_at. */
  update(
    id: string,
    changes: { title?: string | null; category?: Category; status?: DocumentStatus },
  ): Promise<Document>
  /** The contents, in this same transaction. */
  content: ContentTx
  /** Whether a consent of the company points to this document (its PDF or an attached scan). */
  referencedByConsent(id: string): Promise<boolean>
}

export interface DocumentFilter {
  /** null: every center and documents without one; else only these centers. */
  centers: string[] | null
  patientId?: string
  category?: Category
  examId?: string
  appointmentId?: string
  status: DocumentStatus
  offset: number
  limit: number
  after?: KeysetAfter
}

/** What a FHIR search of documents asks of the store (the common part is the FhirSearch's). */
export interface DocumentFhirFilter {
  /** null: every center and documents without one (visibleCenters). */
  centers: string[] | null
  /** Each inner list: any of these patients; every list must hold. */
  patientIds: string[][]
  categories: Category[][]
  /** Bounds on the time the document was added (created_at): all must hold. */
  created: DateBound[]
  /** Binary: only documents whose bytes are held (a deleted document's are gone). */
  availableOnly: boolean
}
