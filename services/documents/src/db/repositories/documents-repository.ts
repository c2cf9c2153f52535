import { NotFound, type FhirSearch } from '@clinic/platform/core'
import { TenantRepository, applyKeyset, fhirSearchPage, whereDateBounds } from '@clinic/platform/db'
import { enqueueEvents } from '@clinic/platform/events'
import type { Knex } from 'knex'
import type {
  DocumentFhirFilter,
  DocumentFilter,
  DocumentStore,
  DocumentTx,
} from '../../domain/document-store'
import { DOCUMENT_KEYSET } from '../../domain/list-documents'
import type { Document } from '../../schemas/document'
import { ContentTxRepository } from './content-repository'

const TABLE = 'documents'
const COLUMNS = [
  'id',
  'patient_id',
  'category',
  'title',
  'codalmacen',
  'exam_id',
  'appointment_id',
  'filename',
  'content_type',
  'size_bytes',
  'sha256',
  'uploaded_by',
  'status',
  'created_at',
  'updated_at',
  'version',
] as const
const SELECT: string[] = [...COLUMNS]

/** A row as the API shows it: no company column, instants as RFC 3339 UTC, sizes as numbers. */
function toDocument(row: Record<string, unknown>): Document {
  const out = {} as Record<string, unknown>
  for (const c of COLUMNS) out[c] = row[c]
  out.size_bytes = Number(row.size_bytes)
  out.created_at = (row.created_at as Date).toISOString()
  out.updated_at = (row.updated_at as Date).toISOString()
  return out as Document
}

/**
 * The only code that touches the `documents` table. Every statement filters by company and runs
 * in a transaction that sets `app.idempresa` for the row-level security policies.
 */
export class DocumentsRepository extends TenantRepository<DocumentTx, Document> implements DocumentStore {
  constructor(knex: Knex) {
    super(knex, { name: TABLE, columns: SELECT, toRow: toDocument })
  }

  protected tx(companyId: number, trx: Knex.Transaction): DocumentTx {
    return this.txOf(companyId, trx)
  }

  /** What a use case may do with documents inside another store's transaction (a consent's PDF). */
  txOf(companyId: number, trx: Knex.Transaction): DocumentTx {
    return {
      findById: (id, opts) => this.rowById(trx, id, opts),
      async insert(id, fields) {
        const [row] = await trx(TABLE)
          .insert({ idempresa: companyId, id, ...fields })
          .returning(SELECT)
        return toDocument(row as Record<string, unknown>)
      },
      async update(id, changes) {
        const [row] = await trx(TABLE)
          .where({ idempresa: companyId, id })
          .update({
            ...changes,
            ...(changes.status === 'deleted'
              ? { deleted_at: trx.raw(`date_trunc('milliseconds', now())`) }
              : {}),
            version: trx.raw('version + 1'),
            updated_at: trx.raw(`date_trunc('milliseconds', now())`),
          } as Record<string, unknown>)
          .returning(SELECT)
        if (!row) throw new NotFound('No such document')
        return toDocument(row as Record<string, unknown>)
      },
      content: new ContentTxRepository(trx, companyId),
      async referencedByConsent(id) {
        const row = await trx('consents').where({ idempresa: companyId, document_id: id }).first('id')
        return row !== undefined
      },
      publish: (events) => enqueueEvents(trx, events),
    }
  }

  async list(companyId: number, f: DocumentFilter): Promise<{ rows: Document[]; total: number }> {
    const matching = this.knex(TABLE).where({ idempresa: companyId, status: f.status })
    if (f.centers) matching.whereIn('codalmacen', f.centers)
    if (f.patientId) matching.where('patient_id', f.patientId)
    if (f.category) matching.where('category', f.category)
    if (f.examId) matching.where('exam_id', f.examId)
    if (f.appointmentId) matching.where('appointment_id', f.appointmentId)
    const page = matching.clone().select(SELECT)
    const orderBy = applyKeyset(page, DOCUMENT_KEYSET, f.after)
    page.offset(f.offset).limit(f.limit)
    const total = matching.clone().count({ n: '*' })
    return this.page(companyId, { page, total, orderBy })
  }

  /**
   * A FHIR search (DocumentReference, Binary): each parameter's alternatives OR, the parameters
   * AND; the shared part (`_id`, `_lastUpdated`, order, cursor, total) is fhirSearchPage's.
   */
  async fhirSearch(companyId: number, f: DocumentFhirFilter, s: FhirSearch) {
    const matching = this.knex(TABLE).where('idempresa', companyId)
    if (f.availableOnly) matching.where('status', 'available')
    if (f.centers) matching.whereIn('codalmacen', f.centers)
    for (const ids of f.patientIds) matching.whereIn('patient_id', ids)
    for (const categories of f.categories) matching.whereIn('category', categories)
    whereDateBounds(matching, 'created_at', f.created)
    const page = await fhirSearchPage<Record<string, unknown>>(this.knex, companyId, matching, SELECT, s, {
      updatedAt: 'updated_at',
      idKind: 'uuid',
    })
    return { ...page, rows: page.rows.map(toDocument) }
  }
}
