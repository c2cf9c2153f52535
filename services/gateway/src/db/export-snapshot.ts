import type { Knex } from 'knex'
import type { HeldSnapshot } from '../export/export-store'

/** What the export's snapshot connections call themselves: settled() does not wait for them (they write nothing). */
export const SNAPSHOT_APPLICATION = 'clinic-fhir-export-snapshot'

/**
 * A snapshot of the whole database (pg_export_snapshot) on a pooled connection of its own, in a
 * read-only repeatable-read transaction kept open until released: the services read an export's
 * pages in it (FHIR_SNAPSHOT_HEADER). If the connection fails the snapshot is gone (`alive()`).
 */
export async function holdSnapshot(knex: Knex): Promise<HeldSnapshot> {
  const client = knex.client as {
    acquireConnection(): Promise<PgConnection>
    releaseConnection(c: PgConnection): Promise<void>
  }
  const conn = await client.acquireConnection()
  let alive = true
  const onError = () => {
    alive = false
  }
  conn.on('error', onError)
  conn.on('end', onError)
  try {
    await conn.query(`SET application_name = '${SNAPSHOT_APPLICATION}'`)
    // Just before the snapshot: the time, and the start of the oldest transaction still open
    // (snapshots aside). Every transaction begun before the earlier of the two has ended before the
    // snapshot, so every row updated before then is in it: that instant, to the millisecond below,
    // is the export's transactionTime.
    const before = await conn.query(
      `SELECT least(clock_timestamp(), (SELECT min(xact_start) FROM pg_stat_activity
                WHERE datname = current_database() AND pid <> pg_backend_pid()
                  AND application_name <> '${SNAPSHOT_APPLICATION}')) AS upto`,
    )
    await conn.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY')
    const { rows } = await conn.query('SELECT pg_export_snapshot() AS id')
    const upto = (before.rows[0]!.upto as Date).getTime()
    return {
      id: rows[0]!.id as string,
      // `le` a millisecond instant is before the next millisecond: that must be at most `upto`.
      at: new Date(Math.floor(upto) - 1),
      alive: () => alive,
      release: async () => {
        if (alive) await conn.query('COMMIT; RESET application_name').catch(onError)
        conn.removeListener('error', onError)
        conn.removeListener('end', onError)
        await client.releaseConnection(conn)
      },
    }
  } catch (err) {
    conn.removeListener('error', onError)
    conn.removeListener('end', onError)
    await client.releaseConnection(conn)
    throw err
  }
}

/**
 * Whether every transaction of this database that began before `until` has ended (this session's
 * aside), and the database's clock is past `until`: a row last updated before `until` is then
 * visible, or never will be. Needs pg_read_all_stats (migration 0007): without it another
 * role's xact_start reads as null and the answer would be a guess, so that is an error.
 */
export async function settledBefore(knex: Knex, until: Date): Promise<boolean> {
  const { rows } = await knex.raw(
    `SELECT pg_has_role('pg_read_all_stats', 'USAGE') AS may_see,
            clock_timestamp() >= ?::timestamptz AS passed,
            (SELECT count(*) FROM pg_stat_activity
              WHERE datname = current_database() AND pid <> pg_backend_pid()
                AND application_name <> ? AND xact_start < ?::timestamptz)::int AS open`,
    [until, SNAPSHOT_APPLICATION, until],
  )
  const r = rows[0] as { may_see: boolean; passed: boolean; open: number }
  if (!r.may_see)
    throw new Error('the gateway role cannot read pg_stat_activity (pg_read_all_stats): migrate')
  return r.passed && r.open === 0
}

/** The driver's connection knex pools (pg.Client). */
interface PgConnection {
  query(text: string): Promise<{ rows: Array<Record<string, unknown>> }>
  on(event: 'error' | 'end', f: () => void): void
  removeListener(event: 'error' | 'end', f: () => void): void
}
