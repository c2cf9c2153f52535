import { Readable } from 'node:stream'
import {
  CenterQuery,
  ETagHeader,
  IdParams,
  PatchHeaders,
  PostHeaders,
  STREAMED_BODY_SCHEMA,
  listOf,
  problem,
  problemSchema,
  sendResource,
  type RequestErrorOptions,
} from '@clinic/platform'
import { Type, type FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { ContentStore } from '../domain/content-store'
import { deleteDocument } from '../domain/delete-document'
import { updateDocument } from '../domain/update-document'
import type { AppointmentDirectory, ExamDirectory, PatientDirectory } from '../domain/directories'
import type { DocumentStore } from '../domain/document-store'
import type { MagicNumbers } from '../domain/detect-type'
import { getDocument } from '../domain/get-document'
import { listDocuments } from '../domain/list-documents'
import { getDocumentContent } from '../domain/get-document-content'
import { uploadDocument } from '../domain/upload-document'
import {
  Document,
  ListDocumentsQuery,
  READ_ONLY_FIELDS,
  UpdateDocumentBody,
  UploadBody,
} from '../schemas/document'
import { sendContent } from './download'
import { multipartParts } from './multipart-parts'

const tags = ['documents']
/** A 415 of an upload: `found` names what the bytes are. */
const UnsupportedTypeProblem = Type.Unsafe({
  ...problemSchema,
  title: 'UnsupportedTypeProblem',
  description: 'unsupported_media_type: `found` names what the bytes are',
  properties: {
    ...problemSchema.properties,
    found: Type.String({ description: 'the type the bytes show (e.g. text/html), never the one sent' }),
  },
})
const PATCH_RULES: RequestErrorOptions = { readOnlyFields: READ_ONLY_FIELDS }

const uploadRoute = {
  config: { streamedBody: true },
  schema: {
    tags,
    operationId: 'uploadDocument',
    summary: 'Upload a document (multipart/form-data)',
    description:
      "A `file` part and the fields. The type is decided from the bytes, never from the part's Content-Type or the file name: PDF, JPEG, PNG, TIFF, WebP, HEIC, DICOM; anything else is 415 naming what was found. Over DOCUMENTS_MAX_BYTES (25 MiB) the upload is cut off at once with 413 and nothing is kept. `patient_id` must be a patient of the company (422 unknown_patient), `appointment_id` an appointment and `exam_id` an exam of that patient in the company (422 unknown_appointment, 422 unknown_exam). With `Idempotency-Key`, a retry with the same fields and the same file bytes replays (whatever its multipart boundary).",
    querystring: CenterQuery,
    headers: PostHeaders,
    body: { content: { 'multipart/form-data': { schema: { ...UploadBody, [STREAMED_BODY_SCHEMA]: true } } } },
    response: {
      201: { ...Document, headers: { ...ETagHeader, location: Type.String() } },
      413: problem('payload_too_large'),
      415: UnsupportedTypeProblem,
      422: problem('unknown_patient, unknown_appointment or unknown_exam'),
      503: problem('upstream_unavailable (Retry-After)'),
    },
  },
}

const listRoute = {
  schema: {
    tags,
    operationId: 'listDocuments',
    summary: "List documents (a patient's: patient_id)",
    description:
      'Newest first. Deleted documents are listed only with `status=deleted`. A token limited to centers sees only its centers.',
    querystring: ListDocumentsQuery,
    response: { 200: listOf(Document, 'DocumentList') },
  },
}

const getRoute = {
  schema: {
    tags,
    operationId: 'getDocument',
    summary: "Read one document's metadata",
    description: 'Deleted documents too (`status: deleted`): their metadata stays for the trail.',
    params: IdParams,
    querystring: CenterQuery,
    response: { 200: { ...Document, headers: ETagHeader } },
  },
}

const updateRoute = {
  config: { rules: PATCH_RULES },
  schema: {
    tags,
    operationId: 'updateDocument',
    summary: 'Change the title or category of a document',
    description:
      'Only the fields sent change. `If-Match` with a stale version is 412; a deleted document is 410. The category of evidence (a document of category `consent`, or one a consent points to) stays: 409 document_in_use.',
    params: IdParams,
    querystring: CenterQuery,
    headers: PatchHeaders,
    body: UpdateDocumentBody,
    response: {
      200: { ...Document, headers: ETagHeader },
      409: problem('document_in_use'),
      410: problem('document_deleted'),
      412: problem('version_mismatch'),
    },
  },
}

const deleteRoute = {
  schema: {
    tags,
    operationId: 'deleteDocument',
    summary: 'Delete a document',
    description:
      'The document becomes `deleted` and is no longer listed; its content answers 410. Its bytes are removed once no other document of the company holds the same sha256; the metadata stays for the trail. Evidence is never deleted: a document a consent points to (its signed PDF, an attached scanned form) or of category `consent` is 409 document_in_use, its bytes kept.',
    params: IdParams,
    querystring: CenterQuery,
    response: { 204: Type.Null({ description: 'deleted' }), 409: problem('document_in_use') },
  },
}

const contentRoute = {
  schema: {
    tags,
    operationId: 'getDocumentContent',
    summary: "Download a document's bytes",
    description:
      "The bytes as stored, `Content-Type` the detected type, as an attachment named with the extension of that type (the kept name's own replaced or appended: a PNG uploaded as `fondo.pdf` downloads as `fondo.png`), `ETag` the sha256, `Range: bytes=a-b` answered 206 (one range). Sandboxed (`Content-Security-Policy: sandbox`, `nosniff`) so no content runs in a browser. A deleted document's content is 410. Every download is on the audit trail.",
    params: IdParams,
    querystring: CenterQuery,
    headers: Type.Object({
      range: Type.Optional(Type.String({ description: 'one range: bytes=0-1023, bytes=1024-, bytes=-500' })),
      'if-range': Type.Optional(
        Type.String({ description: 'the ETag you hold: a range only if it still matches' }),
      ),
    }),
    response: {
      200: {
        description: 'the bytes',
        content: { 'application/octet-stream': { schema: Type.String({ format: 'binary' }) } },
      },
      206: {
        description: 'the range asked for',
        content: { 'application/octet-stream': { schema: Type.String({ format: 'binary' }) } },
      },
      410: problem('document_deleted'),
      416: problem('range_not_satisfiable'),
    },
  },
}

export interface DocumentRoutesOptions {
  store: DocumentStore
  content: ContentStore
  patients: PatientDirectory
  appointments: AppointmentDirectory
  exams: ExamDirectory
  magic: MagicNumbers
  /** DOCUMENTS_MAX_BYTES */
  maxBytes: number
}

/** The routes state their schemas; each handler calls one use case. */
export const documentRoutes: FastifyPluginAsyncTypebox<DocumentRoutesOptions> = async (app, o) => {
  // Uploads are read as they stream (multipartParts): the parser hands the body on unread.
  app.addContentTypeParser('multipart/form-data', (_req, payload, done) => done(null, payload))

  app.get('/documents', listRoute, async (req) => listDocuments(req.ctx, o.store, req.query))

  app.post('/documents', uploadRoute, async (req, reply) => {
    const parts = multipartParts(req.headers, req.body as unknown as Readable, o.maxBytes)
    const result = await uploadDocument(req.ctx, o, {
      parts,
      maxBytes: o.maxBytes,
      queryCenter: req.query.codalmacen,
      idempotencyKey: req.headers['idempotency-key'],
      method: req.method,
      path: req.url,
    })
    return sendResource(reply, result, { status: 201, location: `/documents/${result.body.id}` })
  })

  app.get('/documents/:id', getRoute, async (req, reply) =>
    sendResource(reply, {
      body: await getDocument(req.ctx, o.store, { id: req.params.id, queryCenter: req.query.codalmacen }),
    }),
  )

  app.patch('/documents/:id', updateRoute, async (req, reply) =>
    sendResource(reply, {
      body: await updateDocument(req.ctx, o.store, {
        id: req.params.id,
        patch: req.body,
        queryCenter: req.query.codalmacen,
        ifMatch: req.headers['if-match'],
      }),
    }),
  )

  app.delete('/documents/:id', deleteRoute, async (req, reply) => {
    await deleteDocument(req.ctx, o.store, { id: req.params.id, queryCenter: req.query.codalmacen })
    return reply.code(204).send(null)
  })

  app.get('/documents/:id/content', contentRoute, async (req, reply) => {
    const content = await getDocumentContent(req.ctx, o, {
      id: req.params.id,
      queryCenter: req.query.codalmacen,
      range: req.headers.range,
      ifRange: req.headers['if-range'],
    })
    return sendContent(reply, content)
  })
}
