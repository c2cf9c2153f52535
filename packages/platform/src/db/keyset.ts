import type { Knex } from 'knex'
import { keysetCast, type KeysetAfter, type KeysetDef } from '../keyset'

/**
 * A list's keyset on its page query: the order (every column in the keyset's direction) and, after
 * a cursor, only the rows past it (one row comparison, which the list's index serves). Returns the
 * order again over the page's columns as `p.<column>`, for companyPage's outer query.
 */
export function applyKeyset<K extends string>(
  page: Knex.QueryBuilder,
  ks: KeysetDef<K>,
  after: KeysetAfter<K> | undefined,
): string {
  const names = ks.columns.map((c) => c.name)
  if (after) {
    const placeholders = ks.columns.map((c) => `?${keysetCast(c.kind)}`)
    page.whereRaw(
      `(${names.join(', ')}) ${ks.order === 'asc' ? '>' : '<'} (${placeholders.join(', ')})`,
      names.map((n) => after[n]),
    )
  }
  page.orderBy(names.map((column) => ({ column, order: ks.order })))
  return names.map((n) => `p.${n} ${ks.order}`).join(', ')
}

/**
 * The page and exact total of a list whose total is a plain count: `matching` (the filtered rows)
 * as one page of `columns` in the keyset's order past `after`, and counted. What companyPage and
 * TenantRepository.page take.
 */
export function keysetPageParts<K extends string>(
  matching: Knex.QueryBuilder,
  columns: ReadonlyArray<string | Knex.Raw>,
  ks: KeysetDef<K>,
  f: { offset: number; limit: number; after?: KeysetAfter<K> },
): { page: Knex.QueryBuilder; total: Knex.QueryBuilder; orderBy: string } {
  const page = matching.clone().select([...columns])
  const orderBy = applyKeyset(page, ks, f.after)
  page.offset(f.offset).limit(f.limit)
  return { page, total: matching.clone().count({ n: '*' }), orderBy }
}
