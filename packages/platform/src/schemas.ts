import { Type, type Static, type TSchema } from '@sinclair/typebox'
import { UUID_PATTERN } from './ids'

/** A center code (codalmacen): 1-10 letters, digits, _ or -. */
export const CENTER_CODE = /^[A-Za-z0-9_-]{1,10}$/

/**
 * Text PostgreSQL can store and a screen can show: no NUL or other control characters, C0, DEL
 * and C1 (U+0080-U+009F: NEL, CSI...; tab and line breaks allowed where noted), no lone UTF-16
 * surrogates. Single-line text also refuses the Unicode line and paragraph separators
 * (U+2028/U+2029). Ajv compiles patterns with the `u` flag, so a surrogate range matches only
 * unpaired halves. (The platform's text check, text.ts, refuses NUL and surrogates everywhere.)
 */
const CONTROL = '\\u0000-\\u0008\\u000b\\u000c\\u000e-\\u001f\\u007f-\\u009f\\ud800-\\udfff'
const LINE_BREAK = '\\t\\n\\r\\u2028\\u2029'
/** Not blank, one line, no control characters. */
export const SINGLE_LINE = `^[^${LINE_BREAK}${CONTROL}]*[^\\s${CONTROL}][^${LINE_BREAK}${CONTROL}]*$`
/** Not blank, no control characters (line breaks and tabs allowed). */
export const MULTI_LINE = `^[^${CONTROL}]*[^\\s${CONTROL}][^${CONTROL}]*$`
const CENTER_PATTERN = '^[A-Za-z0-9_-]+$'

/**
 * Plain words for the patterns every service uses (a regex is no message for a person). Route
 * rules add their own (`patternMessages`) over these.
 */
export const COMMON_PATTERN_MESSAGES: Record<string, string> = {
  [SINGLE_LINE]: 'must not be blank nor contain line breaks or control characters',
  [MULTI_LINE]: 'must not be blank nor contain control characters',
  [UUID_PATTERN]: 'must be a UUID',
  [CENTER_PATTERN]: 'may contain only letters, digits, _ and -',
}

/** A center code (codalmacen) field, with what it means where it is used. */
export const centerCode = (description = 'Code of a clinic center of the company (codalmacen)') =>
  Type.String({ minLength: 1, maxLength: 10, pattern: CENTER_PATTERN, description })

/** Schemas every service's routes share (DESIGN.md section 3). */
export const CenterCode = centerCode()
export const Uuid = Type.String({ pattern: UUID_PATTERN, description: 'UUIDv7' })
export const IdParams = Type.Object({ id: Uuid }, { additionalProperties: false })
export const Instant = Type.String({ format: 'date-time', description: 'RFC 3339, UTC' })
export const DateOnly = Type.String({ format: 'date', description: 'YYYY-MM-DD' })

/** `?codalmacen=` alone: the query string of read-one, create and change routes. */
export const CenterQuery = Type.Object(
  { codalmacen: Type.Optional(CenterCode) },
  { additionalProperties: false },
)
/** Response headers of a resource answer: its version as a strong ETag. */
export const ETagHeader = { etag: Type.String({ description: 'the version, quoted: "3"' }) }
/** Request headers of a POST (DESIGN.md section 3). */
export const PostHeaders = Type.Object({
  'idempotency-key': Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 255,
      description: 'the same key and body within 24 h replay the first answer',
    }),
  ),
})
/** Request headers of a PATCH. */
export const PatchHeaders = Type.Object({
  'if-match': Type.Optional(
    Type.String({ description: 'ETag of the version you read ("3", W/"3" or *); stale is 412' }),
  ),
})

export const MAX_OFFSET = 10_000
/**
 * The paging parameters of every list. Optional (a client may leave them out); the validator fills
 * their defaults, so use cases always see both.
 */
export const ListQuery = {
  offset: Type.Optional(
    Type.Integer({
      minimum: 0,
      maximum: MAX_OFFSET,
      default: 0,
      description: 'rows to skip (not with after)',
    }),
  ),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 25, description: 'page size' })),
  after: Type.Optional(
    Type.String({ minLength: 1, maxLength: 512, description: 'cursor from meta.next, for deep paging' }),
  ),
  codalmacen: Type.Optional(CenterCode),
}

export const ListMeta = Type.Object(
  {
    total: Type.Integer({ description: 'exact number of matching records' }),
    offset: Type.Integer(),
    limit: Type.Integer(),
    next: Type.Union([Type.String(), Type.Null()], {
      description: 'cursor for ?after= to get the next page',
    }),
  },
  { title: 'ListMeta' },
)

/**
 * The list envelope of `item`. `title` names it in the merged OpenAPI document (`PatientList`):
 * schemas with a title become named components there.
 */
export const listOf = <T extends TSchema>(item: T, title?: string) =>
  Type.Object({ data: Type.Array(item), meta: ListMeta }, title ? { title } : {})

export const Problem = Type.Object(
  {
    type: Type.String(),
    title: Type.String(),
    status: Type.Integer(),
    code: Type.String(),
    detail: Type.Optional(Type.String()),
    request_id: Type.String(),
    errors: Type.Optional(Type.Array(Type.Object({ path: Type.String(), message: Type.String() }))),
  },
  { $id: 'Problem' },
)

const { $id: _problemId, ...problemFields } = Problem
/** The Problem schema without its $id, to describe a response or extend (a conflict's `alternatives`). */
export const problemSchema = problemFields as unknown as TSchema & { properties: Record<string, TSchema> }
/** A problem+json response of a route schema, described (inline: a shared $id cannot repeat per route). */
export const problem = (description: string): TSchema => ({ ...problemSchema, description }) as TSchema

/**
 * `type: [T, 'null']` instead of anyOf: one clear error per bad field, and null passes formats.
 * Works for scalar, enum and object schemas.
 */
export function nullable<T extends TSchema>(schema: T) {
  // A title names a component in the OpenAPI document; the nullable copy is another schema.
  const {
    type,
    enum: values,
    title: _title,
    ...rest
  } = schema as unknown as TSchema & {
    type: string
    enum?: unknown[]
    title?: string
  }
  // A plain JSON copy: TypeBox's symbols would otherwise keep calling it a `string`.
  const out: Record<string, unknown> = { ...JSON.parse(JSON.stringify(rest)), type: [type, 'null'] }
  if (values) out.enum = [...values, null]
  return Type.Unsafe<Static<T> | null>(out)
}
