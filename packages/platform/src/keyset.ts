import { decodeCursor, encodeCursor, pageOf, type Page } from './cursor'
import { ValidationFailed } from './errors'
import { isUuid } from './ids'
import { isIsoInstant } from './text'

/**
 * The kinds of value a keyset column holds, each checked strictly when a cursor comes back (a
 * cursor is client input): `instant` exactly as the lists write them (toISOString: a forged
 * '2026-02-30' is a 400, never a database error), `uuid`, `text` (any string; NUL and unpaired
 * surrogates are refused for every cursor), `seq` (a positive safe integer).
 */
const KINDS = {
  text: { valid: (v: unknown) => typeof v === 'string', cast: '' },
  instant: { valid: (v: unknown) => isIsoInstant(v), cast: '::timestamptz' },
  uuid: { valid: (v: unknown) => typeof v === 'string' && isUuid(v), cast: '::uuid' },
  seq: { valid: (v: unknown) => typeof v === 'number' && Number.isSafeInteger(v) && v >= 1, cast: '' },
} as const

export type KeysetKind = keyof typeof KINDS

export interface KeysetColumn<K extends string = string> {
  name: K
  kind: KeysetKind
  /** A further check of a valid value (appointments: the instant is in the booking window). */
  check?: (value: never) => boolean
}

/** A list's order: its columns (the last one unique), one direction, and a tag naming the sort. */
export interface KeysetDef<K extends string = string> {
  columns: ReadonlyArray<KeysetColumn<K>>
  order: 'asc' | 'desc'
  /**
   * Written first in the cursor, so a cursor of one sort is refused by another ('for this sort' in
   * the message). A list with a single order has none.
   */
  tag?: string
}

/** The position a cursor names: the sort values of the last row of the previous page, by column. */
export type KeysetAfter<K extends string = string> = Record<K, string | number>

/** A list's order with its cursors: `cursorOf` writes them, `parse` reads them back (strictly). */
export interface Keyset<K extends string = string> extends KeysetDef<K> {
  /** The cursor after `row`: its sort values (behind the tag), opaque to clients. */
  cursorOf(row: Record<K, unknown>): string
  /** The position a `meta.next` cursor names; anything else is a 400 naming `/after`. */
  parse(cursor: string): KeysetAfter<K>
}

export function keyset<const K extends string>(def: KeysetDef<K>): Keyset<K> {
  return {
    ...def,
    cursorOf: (row) => keysetCursor(def, row),
    parse: (cursor) => parseKeyset(def, cursor),
  }
}

function keysetCursor<K extends string>(ks: KeysetDef<K>, row: Record<K, unknown>): string {
  const values = ks.columns.map((c) => row[c.name])
  return encodeCursor(ks.tag === undefined ? values : [ks.tag, ...values])
}

/**
 * Strict: the wrong number of values, a NUL, another sort's tag, a forged instant or a non-UUID is
 * `400 validation_failed` naming `/after`.
 */
function parseKeyset<K extends string>(ks: KeysetDef<K>, cursor: string): KeysetAfter<K> {
  const tagged = ks.tag !== undefined
  const values = decodeCursor(cursor, ks.columns.length + (tagged ? 1 : 0))
  if (tagged && values.shift() !== ks.tag) throw badCursor(ks)
  const after = {} as KeysetAfter<K>
  ks.columns.forEach((c, i) => {
    const v = values[i]
    if (!KINDS[c.kind].valid(v) || (c.check && !c.check(v as never))) throw badCursor(ks)
    after[c.name] = v as string | number
  })
  return after
}

const badCursor = (ks: KeysetDef) =>
  new ValidationFailed([
    {
      path: '/after',
      message: `is not a cursor from meta.next${ks.tag === undefined ? '' : ' for this sort'}`,
    },
  ])

/** The SQL cast of a column's kind in a keyset comparison ('' for none). */
export const keysetCast = (kind: KeysetKind): string => KINDS[kind].cast

/** `limit` when a list request gives none (DESIGN.md section 3). */
export const DEFAULT_LIMIT = 25

/** DESIGN.md section 3: a list pages by `offset` or by `after`, never both. */
export function assertOffsetOrAfter(input: { offset?: number; after?: string }): void {
  if (input.after !== undefined && (input.offset ?? 0) > 0)
    throw new ValidationFailed([{ path: '/offset', message: 'cannot be combined with after' }])
}

/** What a list's store is asked for: `limit` is one more than the page, to know there is a next. */
export interface KeysetFetch<K extends string = string> {
  offset: number
  limit: number
  after?: KeysetAfter<K>
}

/**
 * One page of a keyset list, the way every list pages (DESIGN.md section 3): `offset` or `after`,
 * never both; the filter (which may refuse the query) before the cursor; one row more than the
 * page from the store, so `meta.next` is a cursor only when there is a next page.
 */
export async function keysetPage<R extends Record<K, unknown>, F, K extends string>(
  input: { offset?: number; limit?: number; after?: string },
  list: {
    keyset: Keyset<K>
    filter: () => F
    fetch: (filter: F, page: KeysetFetch<K>) => Promise<{ rows: R[]; total: number }>
  },
): Promise<Page<R>> {
  assertOffsetOrAfter(input)
  const filter = list.filter()
  const after = input.after === undefined ? undefined : list.keyset.parse(input.after)
  // The route's schema fills the defaults; a caller without one (a unit test) gets the same.
  const { offset = 0, limit = DEFAULT_LIMIT } = input
  const { rows, total } = await list.fetch(filter, { offset, limit: limit + 1, after })
  return pageOf(rows, { total, offset, limit, cursorOf: (row) => list.keyset.cursorOf(row) })
}
