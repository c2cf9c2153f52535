import type { Document } from '../schemas/document'
import type { DocumentTx } from './document-store'
import { DocumentInUse } from './errors'

/**
 * Evidence stays (DESIGN.md section 16): a document of category `consent`, or one a consent points
 * to, is never deleted (nor recategorised, which would make it deletable). Called with the
 * document's row locked: a grant attaching it locks the row too, so the two never cross.
 */
export async function assertNotEvidence(tx: DocumentTx, document: Document, doing: string) {
  if (document.category === 'consent')
    throw new DocumentInUse(`a document of category consent is evidence and cannot be ${doing}`)
  if (await tx.referencedByConsent(document.id))
    throw new DocumentInUse(`a consent points to this document; it cannot be ${doing}`)
}
