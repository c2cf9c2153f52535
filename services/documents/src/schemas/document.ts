import { Type, type Static } from '@sinclair/typebox'
import { CenterCode, Instant, ListQuery, SINGLE_LINE, Uuid, nullable } from '@clinic/platform/http'

/**
 * The Document contract (DESIGN.md section 15). The upload itself is multipart and read by the
 * route as a stream; its fields are checked against UploadFields once the parts are in.
 */

export const CATEGORIES = [
  'referral',
  'report',
  'consent',
  'imaging',
  'prescription',
  'identity',
  'other',
] as const
export type Category = (typeof CATEGORIES)[number]
export const STATUSES = ['available', 'deleted'] as const
export type DocumentStatus = (typeof STATUSES)[number]

const enumOf = <T extends string>(values: readonly T[], description?: string) =>
  Type.Unsafe<T>({ type: 'string', enum: [...values], ...(description ? { description } : {}) })

const Title = Type.String({
  minLength: 1,
  maxLength: 200,
  pattern: SINGLE_LINE,
  description: 'what it is, for people',
})

/** The text fields of an upload, as the multipart parts carry them (all strings on the wire). */
export const UploadFields = Type.Object(
  {
    patient_id: Uuid,
    // Checked with TypeBox's own checker (the parts are not a JSON body), which knows literals.
    category: Type.Union(
      CATEGORIES.map((c) => Type.Literal(c)),
      { description: CATEGORIES.join(', ') },
    ),
    title: Type.Optional(Title),
    codalmacen: Type.Optional(CenterCode),
    exam_id: Type.Optional(Uuid),
    appointment_id: Type.Optional(Uuid),
  },
  { additionalProperties: false },
)
export type UploadFieldsInput = Static<typeof UploadFields>

/** What the OpenAPI document shows of the multipart body (the route reads it as a stream). */
export const UploadBody = Type.Object(
  {
    file: Type.String({
      format: 'binary',
      description:
        'the bytes: PDF, JPEG, PNG, TIFF, WebP, HEIC or DICOM, decided from the bytes (else 415); at most DOCUMENTS_MAX_BYTES (25 MiB, else 413)',
    }),
    ...UploadFields.properties,
  },
  { title: 'DocumentUpload', additionalProperties: false, required: ['file', 'patient_id', 'category'] },
)

export const Document = Type.Object(
  {
    id: Uuid,
    patient_id: Uuid,
    category: enumOf(CATEGORIES),
    title: nullable(Type.String()),
    codalmacen: nullable(Type.String()),
    exam_id: nullable(Uuid),
    appointment_id: nullable(Uuid),
    filename: Type.String({ description: "the client's file name, without paths or control characters" }),
    content_type: Type.String({ description: 'the type its bytes show (never the one the client sent)' }),
    size_bytes: Type.Integer({ minimum: 0 }),
    sha256: Type.String({ pattern: '^[0-9a-f]{64}$' }),
    uploaded_by: Type.String({ description: 'the username that uploaded it' }),
    status: enumOf(STATUSES),
    created_at: Instant,
    updated_at: Instant,
    version: Type.Integer({ minimum: 1, description: 'increments on every change; the ETag' }),
  },
  {
    title: 'Document',
    additionalProperties: false,
    examples: [
      {
        id: '019ab2c6-3b00-7000-8000-000000000003',
        patient_id: '019ab2c4-1f00-7000-8000-000000000001',
        category: 'referral',
        title: 'Volante de derivación',
        codalmacen: 'ALM1',
        exam_id: null,
        appointment_id: null,
        filename: 'volante.pdf',
        content_type: 'application/pdf',
        size_bytes: 48213,
        sha256: '3f0a1d0c5b7e8f9a0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e2f3a',
        uploaded_by: 'alice',
        status: 'available',
        created_at: '2026-11-22T17:05:12.345Z',
        updated_at: '2026-11-22T17:05:12.345Z',
        version: 1,
      },
    ],
  },
)
export type Document = Static<typeof Document>

export const UpdateDocumentBody = Type.Object(
  { title: Type.Optional(nullable(Title)), category: Type.Optional(enumOf(CATEGORIES)) },
  { title: 'DocumentPatch', additionalProperties: false, examples: [{ title: 'Informe OCT' }] },
)
export type UpdateDocumentInput = Static<typeof UpdateDocumentBody>

export const ListDocumentsQuery = Type.Object(
  {
    ...ListQuery,
    patient_id: Type.Optional(Uuid),
    category: Type.Optional(enumOf(CATEGORIES)),
    exam_id: Type.Optional(Uuid),
    appointment_id: Type.Optional(Uuid),
    status: Type.Optional(
      enumOf(STATUSES, 'default `available`: deleted documents are not listed unless asked for'),
    ),
  },
  { additionalProperties: false },
)
export type ListDocumentsInput = Static<typeof ListDocumentsQuery>

/** Fields a client can never write; named as read-only in a 400 rather than as unknown. */
export const READ_ONLY_FIELDS = [
  'id',
  'version',
  'created_at',
  'updated_at',
  'filename',
  'content_type',
  'size_bytes',
  'sha256',
  'uploaded_by',
  'status',
  'patient_id',
  'idempresa',
] as const
