import { findVisible, type Ctx } from '@clinic/platform/core'
import type { Document } from '../schemas/document'
import type { DocumentStore } from './document-store'

/** One document of the caller's company and centers (deleted ones too: their metadata stays). */
export function getDocument(
  ctx: Ctx,
  store: DocumentStore,
  input: { id: string; queryCenter?: string },
): Promise<Document> {
  return findVisible(ctx, store, input.id.toLowerCase(), {
    queryCenter: input.queryCenter,
    notFound: 'No such document',
  })
}
