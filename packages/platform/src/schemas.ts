import { Type, type Static, type TSchema } from '@sinclair/typebox'
import { UUID_PATTERN } from './ids'

/** A center code (codalmacen): 1-10 letters, digits, _ or -. */
export const CENTER_CODE = /^[A-Za-z0-9_-]{1,10}$/

/** Schemas every service's routes share (DESIGN.md section 3). */
export const CenterCode = Type.String({
  minLength: 1,
  maxLength: 10,
  pattern: '^[A-Za-z0-9_-]+$',
  description: 'Code of a clinic center of the company (codalmacen)',
})
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
export const ListQuery = {
  offset: Type.Integer({ minimum: 0, maximum: MAX_OFFSET, default: 0 }),
  limit: Type.Integer({ minimum: 1, maximum: 100, default: 25 }),
  after: Type.Optional(
    Type.String({ minLength: 1, maxLength: 512, description: 'cursor from meta.next, for deep paging' }),
  ),
  codalmacen: Type.Optional(CenterCode),
}

export const ListMeta = Type.Object({
  total: Type.Integer({ description: 'exact number of matching records' }),
  offset: Type.Integer(),
  limit: Type.Integer(),
  next: Type.Union([Type.String(), Type.Null()], { description: 'cursor for ?after= to get the next page' }),
})

export const listOf = <T extends TSchema>(item: T) => Type.Object({ data: Type.Array(item), meta: ListMeta })

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

const { $id: _problemId, ...problemSchema } = Problem
/** A problem+json response of a route schema, described (inline: a shared $id cannot repeat per route). */
export const problem = (description: string): TSchema => ({ ...problemSchema, description }) as TSchema

/**
 * `type: [T, 'null']` instead of anyOf: one clear error per bad field, and null passes formats.
 * Works for scalar, enum and object schemas.
 */
export function nullable<T extends TSchema>(schema: T) {
  const { type, enum: values, ...rest } = schema as unknown as TSchema & { type: string; enum?: unknown[] }
  // A plain JSON copy: TypeBox's symbols would otherwise keep calling it a `string`.
  const out: Record<string, unknown> = { ...JSON.parse(JSON.stringify(rest)), type: [type, 'null'] }
  if (values) out.enum = [...values, null]
  return Type.Unsafe<Static<T> | null>(out)
}
