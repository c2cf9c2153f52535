import type { Knex } from 'knex'
import type { CloudEvent } from '../events'
import { runPrepared, runPreparedQuery } from './prepared'

/**
 * A transaction in which row-level security sees one company: `app.idempresa` (what the services'
 * policies compare with `idempresa`) is set transaction-local, so it never outlives the
 * transaction on a pooled connection. Repositories run every statement inside one.
 */
export function companyTransaction<T>(
  knex: Knex,
  companyId: number,
  fn: (trx: Knex.Transaction) => Promise<T>,
  config?: Knex.TransactionConfig,
): Promise<T> {
  return knex.transaction(async (trx) => {
    await setCompany(trx, companyId)
    return fn(trx)
  }, config)
}

/**
 * The setting first, then the part. A statement that sets `app.idempresa` and reads under row-level
 * security must not let PostgreSQL run any of the read before the setting: the row of the setting
 * (`c`) is computed on its own (OFFSET 0 keeps it from being folded into the read), and each part
 * refers to it inside itself and is fenced too (OFFSET 0), so it runs laterally, after it. Without
 * the fences the planner lifted the policy's test (`idempresa = current_setting(...)`, which it
 * derives as a constant condition when the query filters `idempresa = ?`) above the whole
 * statement, or ran an aggregate first: the read saw no rows (it fails closed, never open).
 */
const SETTING = `(SELECT set_config('app.idempresa', ?, true) AS tenant OFFSET 0) c`
// Always true (set_config returns the value): it only makes the part depend on the setting's row.
const afterSetting = (part: Knex.QueryBuilder) => part.clone().whereRaw('c.tenant IS NOT NULL')

/**
 * One read under the company's row-level security in one round trip: `set_config` and the query
 * in a single statement, which is its own transaction, so the setting ends with it (no BEGIN,
 * no COMMIT). It runs prepared (runPrepared): PostgreSQL plans each text once per connection.
 */
export async function companyRead<T>(knex: Knex, companyId: number, query: Knex.QueryBuilder): Promise<T[]> {
  return runPreparedQuery<T>(knex, readStatement(knex, companyId, query))
}

const readStatement = (knex: Knex, companyId: number, query: Knex.QueryBuilder): Knex.Raw =>
  knex.raw(`SELECT q.* FROM ${SETTING} CROSS JOIN LATERAL (SELECT * FROM ? s OFFSET 0) q`, [
    String(companyId),
    afterSetting(query),
  ])

/**
 * Row `id` of the company in `table` (those columns) in one round trip (companyRead), or null. The
 * most frequent read of the API: its text is built once per table and columns (byIdStatement), and
 * a call only puts its company and id in their places.
 */
export async function companyRowById<T>(
  knex: Knex,
  companyId: number,
  table: string,
  id: string,
  columns: readonly string[],
): Promise<T | null> {
  // As knex refuses to compile an undefined binding: a null would quietly find nothing.
  if (id === undefined) throw new TypeError(`companyRowById: undefined id for ${table}`)
  const s = byIdStatement(knex, table, columns)
  const [row] = await runPrepared<T>(
    knex,
    s.sql,
    s.values.map((v) => v(companyId, id)),
  )
  return row ?? null
}

type ByIdValue = (companyId: number, id: string) => Knex.Value
const byIdStatements = new WeakMap<Knex, Map<string, { sql: string; values: ByIdValue[] }>>()

function byIdStatement(knex: Knex, table: string, columns: readonly string[]) {
  let built = byIdStatements.get(knex)
  if (!built) byIdStatements.set(knex, (built = new Map()))
  const key = `${table}\0${columns.join('\0')}`
  let s = built.get(key)
  if (!s) built.set(key, (s = buildByIdStatement(knex, table, columns)))
  return s
}

// Stand-ins no call passes, to see where knex puts the company and the id among the bindings.
const SAMPLE_COMPANY = -2_000_000_011
const SAMPLE_ID = 'companyRowById-sample-id'

/**
 * The by-id read as knex builds it, built once with stand-ins: each binding is then the company
 * (as the setting's text or as the filter's integer), the id, or a constant (the limit).
 */
function buildByIdStatement(knex: Knex, table: string, columns: readonly string[]) {
  const query = knex(table)
    .where({ idempresa: SAMPLE_COMPANY, id: SAMPLE_ID })
    .select([...columns])
    .limit(1)
  const { sql, bindings } = readStatement(knex, SAMPLE_COMPANY, query).toSQL()
  if (sql.includes(String(SAMPLE_COMPANY)) || sql.includes(SAMPLE_ID))
    throw new Error(`companyRowById: knex put a value in the text for ${table}`)
  const values = bindings.map((b): ByIdValue => {
    if (b === String(SAMPLE_COMPANY)) return (companyId) => String(companyId)
    if (b === SAMPLE_COMPANY) return (companyId) => companyId
    if (b === SAMPLE_ID) return (_, id) => id
    return () => b
  })
  return { sql, values }
}

/**
 * A list's statement: one page and its exact total under the company's row-level security, in one
 * statement (one snapshot, one round trip, its own transaction), as companyRead. `total` is a
 * query of one row with a column `n`; `orderBy` restates the page's order for the outer query (SQL
 * keeps no order through a join otherwise), over the page's columns as `p.<column>`. The total
 * comes back even when the page is empty, on a row of nulls.
 */
export function companyPageStatement(
  knex: Knex,
  companyId: number,
  q: { page: Knex.QueryBuilder; total: Knex.QueryBuilder; orderBy: string },
): Knex.Raw {
  return knex.raw(
    `SELECT t.n AS page_total, p.* FROM ${SETTING}
       CROSS JOIN LATERAL (SELECT * FROM ? s OFFSET 0) t
       LEFT JOIN LATERAL (SELECT * FROM ? s OFFSET 0) p ON true
     ORDER BY ${q.orderBy}`,
    [String(companyId), afterSetting(q.total), afterSetting(q.page)],
  )
}

/** Runs companyPageStatement, prepared (runPrepared): the page's rows (`id` not null) and the total. */
export async function companyPage<T extends { id: unknown }>(
  knex: Knex,
  companyId: number,
  q: { page: Knex.QueryBuilder; total: Knex.QueryBuilder; orderBy: string },
): Promise<{ rows: T[]; total: number }> {
  const list = await runPreparedQuery<T & { page_total: unknown }>(
    knex,
    companyPageStatement(knex, companyId, q),
  )
  return {
    rows: list.filter((r) => r.id !== null),
    total: Number(list[0]?.page_total ?? 0),
  }
}

/**
 * The outbox rows of a JSON array of events (one parameter, unpacked by PostgreSQL, whatever their
 * number): what enqueueEvents runs, and the part of companyInsert that writes the events.
 */
export const OUTBOX_ROWS = `INSERT INTO outbox (event_id, idempresa, type, payload)
     SELECT (e->>'id')::uuid, (e->>'idempresa')::integer, e->>'type', e FROM jsonb_array_elements(?::jsonb) e`

/**
 * companyInsert's statements by shape (table, the columns given, returning): knex builds each once.
 * `order` is the row's columns in the order of their placeholders.
 */
const insertStatements = new Map<string, { sql: string; order: string[] }>()

function insertStatement(knex: Knex, table: string, columns: string[], returning: readonly string[]) {
  const shape = `${table}\u0000${columns.join(',')}\u0000${returning.join(',')}`
  let statement = insertStatements.get(shape)
  if (statement === undefined) {
    // Each column's name as its own value: the bindings knex returns give the placeholders' order.
    const insert = knex(table)
      .insert({
        ...Object.fromEntries(columns.map((c) => [c, c])),
        idempresa: knex.raw('(SELECT c.tenant::integer FROM c)'),
      })
      .returning([...returning])
      .toSQL()
    statement = {
      sql: `WITH c AS (SELECT set_config('app.idempresa', ?, true) AS tenant OFFSET 0),
     o AS (${OUTBOX_ROWS})
     ${insert.sql}`,
      order: insert.bindings as string[],
    }
    insertStatements.set(shape, statement)
  }
  return statement
}

/**
 * A new row of the company in `table` and its events in the outbox, in one statement: its own
 * transaction, so one round trip instead of BEGIN, the setting, the insert, the outbox and COMMIT.
 * The row and its events exist together or not at all, as in a transaction. The row's `idempresa`
 * is read from the setting's row (`c`), so PostgreSQL computes the setting before it checks the
 * row against the table's row-level security policy. Returns the `returning` columns; rejects
 * with the driver's error (a unique violation keeps its constraint's name). Prepared (runPrepared);
 * the text is built once per shape of row (columns left undefined take their defaults; values are
 * plain, never knex.raw).
 */
export async function companyInsert<T>(
  knex: Knex,
  companyId: number,
  q: { table: string; row: Record<string, unknown>; returning: readonly string[]; events: CloudEvent[] },
): Promise<T> {
  const columns = Object.keys(q.row).filter((c) => q.row[c] !== undefined)
  const { sql, order } = insertStatement(knex, q.table, columns, q.returning)
  const [row] = await runPrepared<T>(knex, sql, [
    String(companyId),
    JSON.stringify(q.events),
    ...order.map((c) => q.row[c] as Knex.Value),
  ])
  if (!row) throw new Error(`companyInsert: no row returned from ${q.table}`)
  return row
}

// The company each open transaction set last, so a read in it (rowById) filters by the same one.
const companies = new WeakMap<Knex.Transaction, number>()

/** Sets `app.idempresa` for the rest of this transaction: what the row-level security policies check. */
export const setCompany = (trx: Knex.Transaction, companyId: number) => {
  companies.set(trx, companyId)
  return trx.raw(`select set_config('app.idempresa', ?, true)`, [String(companyId)])
}

/** The company `trx` was set to (setCompany, companyTransaction); throws when it was set to none. */
export function companyOf(trx: Knex.Transaction): number {
  const companyId = companies.get(trx)
  if (companyId === undefined) throw new Error('not a company transaction: setCompany was never called on it')
  return companyId
}
