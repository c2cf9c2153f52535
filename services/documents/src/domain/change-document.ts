import { VersionMismatch, ifMatchAllows, visibleCenters, visibleRow, type Ctx } from '@clinic/platform/core'
import { documentDeleted, documentUpdated } from '../events/document-events'
import type { Document, UpdateDocumentInput } from '../schemas/document'
import type { DocumentStore } from './document-store'
import type { DocumentTx } from './document-store'
import { DocumentDeleted, DocumentInUse } from './errors'

/**
 * Evidence stays (DESIGN.md section 16): a document of category `consent`, or one a consent points
 * to, is never deleted (nor recategorised, which would make it deletable). Called with the
 * document's row locked: a grant attaching it locks the row too, so the two never cross.
 */
async function assertNotEvidence(tx: DocumentTx, document: Document, doing: string) {
  if (document.category === 'consent')
    throw new DocumentInUse(`a document of category consent is evidence and cannot be ${doing}`)
  if (await tx.referencedByConsent(document.id))
    throw new DocumentInUse(`a consent points to this document; it cannot be ${doing}`)
}

/**
 * PATCH of `title` and `category` under a row lock, If-Match against the locked version. A PATCH
 * that changes nothing keeps version and updated_at and emits no event; a deleted document is 410;
 * the category of evidence stays (409 document_in_use).
 */
export async function updateDocument(
  ctx: Ctx,
  store: DocumentStore,
  input: { id: string; patch: UpdateDocumentInput; queryCenter?: string; ifMatch?: string },
): Promise<Document> {
  const visible = visibleCenters(ctx.auth, input.queryCenter)
  const id = input.id.toLowerCase()
  return store.transaction(ctx.auth.companyId, async (tx) => {
    const current = visibleRow(visible, await tx.findById(id, { forUpdate: true }), 'No such document')
    if (input.ifMatch !== undefined && !ifMatchAllows(input.ifMatch, current.version))
      throw new VersionMismatch()
    if (current.status === 'deleted') throw new DocumentDeleted()
    const changes = (['title', 'category'] as const).filter(
      (k) => input.patch[k] !== undefined && input.patch[k] !== current[k],
    )
    if (!changes.length) return current
    if (changes.includes('category')) await assertNotEvidence(tx, current, 'recategorised')
    const document = await tx.update(id, Object.fromEntries(changes.map((k) => [k, input.patch[k]])))
    await tx.publish([documentUpdated(ctx, document, changes)])
    return document
  })
}

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
