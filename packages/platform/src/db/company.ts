import type { Knex } from 'knex'

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
 * no COMMIT).
 */
export async function companyRead<T>(knex: Knex, companyId: number, query: Knex.QueryBuilder): Promise<T[]> {
  const { rows } = await knex.raw<{ rows: T[] }>(
    `SELECT q.* FROM ${SETTING} CROSS JOIN LATERAL (SELECT * FROM ? s OFFSET 0) q`,
    [String(companyId), afterSetting(query)],
  )
  return rows
}

/** Row `id` of the company in `table` (those columns) in one round trip (companyRead), or null. */
export async function companyRowById<T>(
  knex: Knex,
  companyId: number,
  table: string,
  id: string,
  columns: readonly string[],
): Promise<T | null> {
  const [row] = await companyRead<T>(
    knex,
    companyId,
    knex(table)
      .where({ idempresa: companyId, id })
      .select([...columns])
      .limit(1),
  )
  return row ?? null
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

/** Runs companyPageStatement: the page's rows (`id` not null) and the total. */
export async function companyPage<T extends { id: unknown }>(
  knex: Knex,
  companyId: number,
  q: { page: Knex.QueryBuilder; total: Knex.QueryBuilder; orderBy: string },
): Promise<{ rows: T[]; total: number }> {
  const { rows } = await companyPageStatement(knex, companyId, q)
  const list = rows as Array<T & { page_total: unknown }>
  return {
    rows: list.filter((r) => r.id !== null),
    total: Number(list[0]?.page_total ?? 0),
  }
}

/** Sets `app.idempresa` for the rest of this transaction: what the row-level security policies check. */
export const setCompany = (trx: Knex.Transaction, companyId: number) =>
  trx.raw(`select set_config('app.idempresa', ?, true)`, [String(companyId)])
