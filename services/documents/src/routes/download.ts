import { Readable } from 'node:stream'
import type { FastifyReply } from 'fastify'
import { ACCEPTED } from '../domain/detect-type'
import { contentDisposition, downloadName } from '../domain/filename'
import type { Content } from '../domain/get-document-content'

/** Every header of a download (DESIGN.md section 15): it is data to keep, never a page to run. */
export const DOWNLOAD_HEADERS = {
  'x-content-type-options': 'nosniff',
  'content-security-policy': "sandbox; default-src 'none'",
  'cache-control': 'private, no-store',
  'accept-ranges': 'bytes',
}

/**
 * A document's bytes as a download answers them (GET /documents/<id>/content, and FHIR's
 * GET /fhir/R4/Binary/<id>): the detected type, an attachment's name, the sha256 as ETag, 206 with
 * Content-Range for a range.
 */
export function sendContent(reply: FastifyReply, { document, bytes, range }: Content) {
  reply.headers({
    ...DOWNLOAD_HEADERS,
    'content-type': document.content_type,
    'content-disposition': contentDisposition(
      downloadName(document.filename, ACCEPTED[document.content_type] ?? 'bin'),
    ),
    etag: `"${document.sha256}"`,
  })
  if (range) {
    reply.code(206)
    reply.header('content-range', `bytes ${range.start}-${range.end}/${document.size_bytes}`)
    reply.header('content-length', range.end - range.start + 1)
  } else reply.header('content-length', document.size_bytes)
  // One chunk read ahead at most: ten downloads at once hold a few chunks, not files.
  return reply.send(Readable.from(bytes, { highWaterMark: 1 }))
}
