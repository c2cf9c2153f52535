import { ValidationFailed } from './errors'
import { unsafeTextErrors } from './text'

/** A page of a list (DESIGN.md section 3): `meta.total` is exact, `meta.next` a cursor or null. */
export interface PageMeta {
  total: number
  offset: number
  limit: number
  next: string | null
}
export interface Page<T> {
  data: T[]
  meta: PageMeta
}

/** Keyset cursor: the sort values of the last row of a page. Opaque to clients. */
export function encodeCursor(values: unknown[]): string {
  return Buffer.from(JSON.stringify(values)).toString('base64url')
}

/**
 * The values of a cursor from `encodeCursor`, exactly `length` of them, with no string a database
 * could not take (NUL, unpaired surrogates); anything else is a 400. Callers still check each
 * value's type and form: a cursor is client input.
 */
export function decodeCursor(cursor: string, length: number): unknown[] {
  try {
    const values = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'))
    if (Array.isArray(values) && values.length === length && unsafeTextErrors(values).length === 0)
      return values
  } catch {
    /* fall through */
  }
  throw new ValidationFailed([{ path: '/after', message: 'is not a cursor from meta.next' }])
}

/**
 * The page a store answered when asked for `limit + 1` rows: the extra row only says there is a
 * next page, whose cursor is made from the last row shown.
 */
export function pageOf<T>(
  rows: T[],
  o: { total: number; offset: number; limit: number; cursorOf: (row: T) => string },
): Page<T> {
  const data = rows.slice(0, o.limit)
  const last = data[data.length - 1]
  const next = rows.length > o.limit && last !== undefined ? o.cursorOf(last) : null
  return { data, meta: { total: o.total, offset: o.offset, limit: o.limit, next } }
}
