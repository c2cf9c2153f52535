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
    await conn.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY')
    const { rows } = await conn.query('SELECT pg_export_snapshot() AS id')
    return {
      id: rows[0]!.id as string,
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

/** The driver's connection knex pools (pg.Client). */
interface PgConnection {
  query(text: string): Promise<{ rows: Array<Record<string, unknown>> }>
  on(event: 'error' | 'end', f: () => void): void
  removeListener(event: 'error' | 'end', f: () => void): void
}
