import { Type, type TSchema } from '@sinclair/typebox'
import { ValidationFailed } from './errors'
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

/** Keyset cursor: the sort values of the last row of a page. Opaque to clients. */
export function encodeCursor(values: unknown[]): string {
  return Buffer.from(JSON.stringify(values)).toString('base64url')
}

export function decodeCursor(cursor: string, length: number): unknown[] {
  try {
    const values = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'))
    if (Array.isArray(values) && values.length === length) return values
  } catch {
    /* fall through */
  }
  throw new ValidationFailed([{ path: '/after', message: 'is not a cursor from meta.next' }])
}

/** Keeps only the names present in a PATCH body, refusing read-only ones. */
export function refuseReadOnly(body: Record<string, unknown>, readOnly: readonly string[]): void {
  const errors = readOnly.filter((f) => f in body).map((f) => ({ path: `/${f}`, message: 'is read-only' }))
  if (errors.length) throw new ValidationFailed(errors, 'Read-only fields cannot be changed')
}
