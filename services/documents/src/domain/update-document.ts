import { VersionMismatch, ifMatchAllows, visibleCenters, visibleRow, type Ctx } from '@clinic/platform/core'
import { documentUpdated } from '../events/document-events'
import type { Document, UpdateDocumentInput } from '../schemas/document'
import type { DocumentStore } from './document-store'
import { DocumentDeleted } from './errors'
import { assertNotEvidence } from './evidence-rules'

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
