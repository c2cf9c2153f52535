import type { Ctx } from '@clinic/platform/core'
import type { Document } from '../schemas/document'
import type { ContentStore } from './content-store'
import type { DocumentStore } from './document-store'
import { DocumentDeleted, RangeNotSatisfiable } from './errors'
import { getDocument } from './get-document'

export interface Content {
  document: Document
  /** The bytes sent: all of them, or the range asked for. */
  bytes: AsyncIterable<Buffer>
  /** Set when a single range was asked for and is served (206). */
  range?: { start: number; end: number }
}

/**
 * One `bytes=` range of RFC 9110 section 14.1.2 against a content of `size` bytes: the range to
 * serve, null to serve it whole (no header, a unit other than bytes, several ranges, a syntax it
 * does not take: the whole content is a valid answer to each), or 416 when it lies outside.
 */
export function parseRange(header: string | undefined, size: number): { start: number; end: number } | null {
  if (!header) return null
  const m = /^bytes=(\d*)-(\d*)$/.exec(header.trim())
  if (!m || (m[1] === '' && m[2] === '')) return null
  if (m[1] === '') {
    // The last n bytes.
    const n = Number(m[2])
    if (n === 0 || size === 0) throw new RangeNotSatisfiable(size)
    return { start: Math.max(0, size - n), end: size - 1 }
  }
  const start = Number(m[1])
  const end = m[2] === '' ? size - 1 : Math.min(Number(m[2]), size - 1)
  if (m[2] !== '' && Number(m[2]) < start) return null
  if (start >= size) throw new RangeNotSatisfiable(size)
  return { start, end }
}

/** A document's bytes for a download (the gateway records it on the audit trail); deleted: 410. */
export async function getDocumentContent(
  ctx: Ctx,
  deps: { store: DocumentStore; content: ContentStore },
  input: { id: string; queryCenter?: string; range?: string; ifRange?: string },
): Promise<Content> {
  const document = await getDocument(ctx, deps.store, input)
  if (document.status === 'deleted') throw new DocumentDeleted()
  // If-Range with another validator than this content's: the whole content, not a piece of it.
  const honoured = input.ifRange === undefined || input.ifRange === `"${document.sha256}"`
  const range = honoured ? parseRange(input.range, document.size_bytes) : null
  return {
    document,
    bytes: deps.content.read(ctx.auth.companyId, document.sha256, range ?? undefined),
    ...(range ? { range } : {}),
  }
}
