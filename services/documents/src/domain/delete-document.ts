import { visibleCenters, visibleRow, type Ctx } from '@clinic/platform/core'
import { documentDeleted } from '../events/document-events'
import type { DocumentStore } from './document-store'
import { assertNotEvidence } from './evidence-rules'

/**
 * DELETE (DESIGN.md section 15): the document becomes `deleted` (its metadata stays for the
 * trail) and its bytes go in the same transaction unless another document of the company holds the
 * same sha256. Deleting a deleted document changes nothing (DELETE is idempotent). Evidence (a
 * consent's document, any of category `consent`) is 409 document_in_use and keeps its bytes.
 */
export async function deleteDocument(
  ctx: Ctx,
  store: DocumentStore,
  input: { id: string; queryCenter?: string },
): Promise<void> {
  const visible = visibleCenters(ctx.auth, input.queryCenter)
  const id = input.id.toLowerCase()
  await store.transaction(ctx.auth.companyId, async (tx) => {
    const current = visibleRow(visible, await tx.findById(id, { forUpdate: true }), 'No such document')
    if (current.status === 'deleted') return
    await assertNotEvidence(tx, current, 'deleted')
    const document = await tx.update(id, { status: 'deleted' })
    await tx.content.release(document.sha256)
    await tx.publish([documentDeleted(ctx, document)])
  })
  ctx.log.info({ document_id: id }, 'document deleted')
}
