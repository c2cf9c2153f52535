import type { Knex } from 'knex'
import { decodeCursor } from '../cursor'
import { AppError, ValidationFailed } from '../errors'
import type { FhirRows } from '../fhir/bundle'
import type { DateBound, FhirSearch } from '../fhir/search'
import { companyPage } from './company'

/** The last-updated instant of a cursor, to the microsecond as PostgreSQL keeps it. */
const MICROS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/
const badCursor = () =>
  new ValidationFailed([{ path: '/_cursor', message: 'is not a cursor from a next link' }])

/** How a type's table is searched: its last-updated column and the kind of its ids. */
export interface FhirTable {
  /** The column `meta.lastUpdated` is read from (and `_lastUpdated`, `_sort`, paging use). */
  updatedAt: string
  /** `uuid`: an `_id` or cursor that is not one matches nothing (never a database error). */
  idKind: 'uuid' | 'text'
  /** The id column (default `id`). */
  id?: string
  /**
   * The total when the search has no filter of its own (the store's cheaper count, e.g. counter
   * rows); else the matching rows are counted.
   */
  unfilteredTotal?: Knex.QueryBuilder
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

/** The export's snapshot is gone (its job stopped): the export takes a new one. */
export class SnapshotGone extends AppError {
  constructor() {
    super({
      status: 409,
      code: 'fhir_snapshot_gone',
      title: 'The export snapshot is gone',
      detail: 'The snapshot this search was to read in no longer exists',
    })
  }
}

/**
 * `fn` in a read-only transaction that sees the data as of an exported snapshot
 * (pg_export_snapshot, SET TRANSACTION SNAPSHOT): every page of a Bulk Data export reads one state.
 */
async function inSnapshot<T>(knex: Knex, snapshot: string, fn: (trx: Knex.Transaction) => Promise<T>) {
  return knex
    .transaction(
      async (trx) => {
        await trx.raw(`SET TRANSACTION SNAPSHOT '${snapshot.replace(/[^0-9A-F-]/g, '')}'`)
        return fn(trx)
      },
      { isolationLevel: 'repeatable read', readOnly: true },
    )
    .catch((err: { code?: string }) => {
      // 22023: no such snapshot (its transaction ended); 0A000: not importable any more.
      if (err.code === '22023' || err.code === '0A000') throw new SnapshotGone()
      throw err
    })
}

/** Date bounds on a column (timestamptz, or date: the bound's day). */
export function whereDateBounds(
  q: Knex.QueryBuilder,
  column: string,
  bounds: DateBound[],
  cast = '::timestamptz',
) {
  for (const b of bounds) q.whereRaw(`${column} ${b.op} ?${cast}`, [b.at])
}

/**
 * One page of a FHIR search and its exact total in one statement (companyPage): `matching` is the
 * company's rows with the type's own parameters applied; this adds `_id`, `_lastUpdated`, the
 * order (last updated, then id) and the position of `_cursor`, which holds the last row's instant
 * to the microsecond (a millisecond cursor would show a row twice or never).
 */
export async function fhirSearchPage<Row extends Record<string, unknown>>(
  knex: Knex,
  companyId: number,
  matching: Knex.QueryBuilder,
  columns: readonly string[],
  s: FhirSearch,
  t: FhirTable,
): Promise<FhirRows<Row>> {
  const id = t.id ?? 'id'
  const unfiltered = !s.ids && s.lastUpdated.length === 0
  if (s.ids) {
    const ids = t.idKind === 'uuid' ? s.ids.filter((i) => UUID.test(i)) : s.ids
    matching.whereIn(id, ids)
  }
  whereDateBounds(matching, t.updatedAt, s.lastUpdated)
  const at = `to_char(${t.updatedAt} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`
  const page = matching.clone().select([...columns, knex.raw(`${at} AS _fhir_at`)])
  const dir = s.order
  if (s.cursor !== undefined) {
    const [tag, instant, last] = decodeCursor(s.cursor, 3)
    const okId = typeof last === 'string' && (t.idKind === 'text' || UUID.test(last))
    if (tag !== dir || typeof instant !== 'string' || !MICROS.test(instant) || !okId) throw badCursor()
    page.whereRaw(`(${t.updatedAt}, ${id}) ${dir === 'asc' ? '>' : '<'} (?::timestamptz, ?)`, [instant, last])
    // The same bound on the instant alone, which an index of the last-updated column can start at
    // (the row comparison cannot when the two columns are of two tables, e.g. an exam's findings).
    page.whereRaw(`${t.updatedAt} ${dir === 'asc' ? '>=' : '<='} ?::timestamptz`, [instant])
  }
  page.orderBy([
    { column: t.updatedAt, order: dir },
    { column: id, order: dir },
  ])
  page.limit(s.count + 1)
  const total =
    s.total === 'none'
      ? knex.select(knex.raw('NULL::bigint AS n'))
      : (unfiltered && t.unfilteredTotal) || matching.clone().count({ n: '*' })
  const statement = {
    page: s.count === 0 ? page.whereRaw('false') : page,
    total,
    orderBy: `p.${t.updatedAt.split('.').at(-1)} ${dir}, p.${id.split('.').at(-1)} ${dir}`,
  }
  type Paged = Row & { id: unknown; _fhir_at: string }
  const { rows, total: n } = s.snapshot
    ? await inSnapshot(knex, s.snapshot, (trx) => companyPage<Paged>(trx, companyId, statement))
    : await companyPage<Paged>(knex, companyId, statement)
  const more = rows.length > s.count
  const shown = more ? rows.slice(0, s.count) : rows
  const last = shown.at(-1)
  return {
    rows: shown,
    total: s.total === 'none' ? undefined : n,
    next:
      more && last
        ? Buffer.from(JSON.stringify([dir, last._fhir_at, String(last[id.split('.').at(-1)!])])).toString(
            'base64url',
          )
        : null,
  }
}
