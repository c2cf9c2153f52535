import { createHash } from 'node:crypto'
import type { Knex } from 'knex'
import type pg from 'pg'

/**
 * The names of the statements a process prepares, one per SQL text, for at most `max` texts.
 * PostgreSQL keeps a prepared statement on its backend, and node-postgres remembers it on its
 * client, for the connection's whole life: texts built from filters (a list of n centers is n
 * placeholders) are many, so past the bound a new text runs unnamed, planned each time as before.
 */
export class StatementNames {
  private readonly names = new Map<string, string>()

  constructor(readonly max = 200) {}

  /** The name of `sql`, or undefined when `max` other texts took the names. */
  nameOf(sql: string): string | undefined {
    let name = this.names.get(sql)
    if (name === undefined && this.names.size < this.max) {
      // Derived from the text alone: the same text has the same name on every connection and in
      // every instance, and two texts never share one (node-postgres refuses a name reused for
      // another text on a connection).
      name = `p${createHash('sha1').update(sql).digest('hex').slice(0, 24)}`
      this.names.set(sql, name)
    }
    return name
  }
}

const processNames = new StatementNames()

/**
 * Runs one statement as a named prepared statement, so PostgreSQL parses and plans its text once
 * per connection rather than on every call; returns its rows.
 *
 * `sql` is in knex's form, as `.toSQL()` gives it (`?` placeholders, `bindings` in their order).
 * It goes through `knex.raw` with the statement's name as a driver option (knex's documented
 * `.options()`, "options as defined by database client specific libraries"): knex hands node-postgres
 * the query config `{ text, values, name }`, a named query in node-postgres' documented sense
 * (https://node-postgres.com/features/queries#prepared-statements), on whatever connection knex
 * runs it: one of its pool's, or a transaction's own (so reads in a transaction are prepared on
 * its connection too). knex numbers the placeholders, emits its `'query'` event (the statement
 * counter of metrics.ts) and rejects with the driver's error (its `code` and `constraint` intact).
 */
export async function runPrepared<T>(
  knex: Knex,
  sql: string,
  bindings: readonly Knex.Value[],
  names: StatementNames = processNames,
): Promise<T[]> {
  const name = names.nameOf(sql)
  const query = knex.raw<pg.QueryResult>(sql, bindings)
  const { rows } = await (name === undefined ? query : query.options({ name }))
  return rows as T[]
}

/** A knex statement (a query builder or a raw), run as runPrepared runs its text; its rows. */
export function runPreparedQuery<T>(
  knex: Knex,
  statement: Knex.QueryBuilder | Knex.Raw,
  names: StatementNames = processNames,
): Promise<T[]> {
  const { sql, bindings } = statement.toSQL()
  return runPrepared<T>(knex, sql, bindings, names)
}
