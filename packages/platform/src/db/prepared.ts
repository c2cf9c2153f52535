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
 * Runs one statement as a named prepared statement on a connection of knex's pool, so PostgreSQL
 * parses and plans its text once per connection rather than on every call; returns its rows.
 *
 * `sql` is in knex's form, as `.toSQL()` gives it (`?` placeholders, `bindings` in their order).
 * knex's own client runs it: it numbers the placeholders (PostgreSQL prepares the `.toNative()`
 * text), emits knex's `'query'` event (the statement counter of metrics.ts), and rejects with the
 * driver's error (its `code` and `constraint` intact), exactly as it does for `knex.raw`.
 *
 * In a transaction the statement must run on the transaction's connection: it goes through
 * `knex.raw` as any statement of the transaction, unnamed.
 */
export async function runPrepared<T>(
  knex: Knex,
  sql: string,
  bindings: readonly Knex.Value[],
  names: StatementNames = processNames,
): Promise<T[]> {
  if (knex.isTransaction) {
    const { rows } = await knex.raw<{ rows: T[] }>(sql, bindings)
    return rows
  }
  const name = names.nameOf(sql)
  const client = knex.client
  const conn: unknown = await client.acquireConnection()
  try {
    const done = (await client.query(conn, {
      method: 'raw',
      sql,
      bindings,
      // Merged by knex into node-postgres' query config: `{ text, values, name }`.
      options: name === undefined ? {} : { name },
    })) as { response: pg.QueryResult }
    return done.response.rows as T[]
  } finally {
    await client.releaseConnection(conn)
  }
}
