import { keyset, keysetPage, visibleCenters, type Ctx, type Page } from '@clinic/platform/core'
import type { Document, ListDocumentsInput } from '../schemas/document'
import type { DocumentStore } from './document-store'

/** Newest first. */
export const DOCUMENT_KEYSET = keyset({
  tag: 'd',
  order: 'desc',
  columns: [
    { name: 'created_at', kind: 'instant' },
    { name: 'id', kind: 'uuid' },
  ],
})

export function listDocuments(
  ctx: Ctx,
  store: DocumentStore,
  input: ListDocumentsInput,
): Promise<Page<Document>> {
  return keysetPage(input, {
    keyset: DOCUMENT_KEYSET,
    filter: () => visibleCenters(ctx.auth, input.codalmacen),
    fetch: (centers, page) =>
      store.list(ctx.auth.companyId, {
        ...page,
        centers,
        patientId: input.patient_id?.toLowerCase(),
        category: input.category,
        examId: input.exam_id?.toLowerCase(),
        appointmentId: input.appointment_id?.toLowerCase(),
        status: input.status ?? 'available',
      }),
  })
}
