import type { Knex } from 'knex'
import { SCHEMA } from './migrations'

const MONTHLY = /^events_(\d{4})_(\d{2})$/

/**
 * Retention: drops whole monthly partitions recorded before `before` (YYYY-MM), never single rows.
 * Runs as the schema owner (the service role cannot drop anything). Each company's last dropped
 * event becomes its retention anchor, where verification resumes. The default partition is kept.
 */
export async function dropPartitionsBefore(
  ownerKnex: Knex,
  before: string,
  now = new Date(),
): Promise<string[]> {
  if (!/^\d{4}-(0[1-9]|1[0-2])$/.test(before)) throw new Error('--before must be a month, YYYY-MM')
  const current = now.toISOString().slice(0, 7)
  if (before > current) throw new Error('--before cannot be later than the current month')
  const cutoff = `events_${before.replace('-', '_')}`
  const { rows } = await ownerKnex.raw<{ rows: Array<{ name: string }> }>(
    `SELECT c.relname AS name
       FROM pg_inherits i
       JOIN pg_class c ON c.oid = i.inhrelid
       JOIN pg_class p ON p.oid = i.inhparent
       JOIN pg_namespace n ON n.oid = p.relnamespace
      WHERE n.nspname = ? AND p.relname = 'events'
      ORDER BY c.relname`,
    [SCHEMA],
  )
  const doomed = rows.map((r) => r.name).filter((name) => MONTHLY.test(name) && name < cutoff)
  for (const name of doomed) {
    await ownerKnex.transaction(async (trx) => {
      await trx.raw(
        `INSERT INTO retention_anchors (idempresa, seq, hash)
           SELECT DISTINCT ON (idempresa) idempresa, seq, hash FROM ??.?? ORDER BY idempresa, seq DESC
         ON CONFLICT (idempresa) DO UPDATE SET seq = excluded.seq, hash = excluded.hash, dropped_at = now()
           WHERE retention_anchors.seq < excluded.seq`,
        [SCHEMA, name],
      )
      await trx.raw('DROP TABLE ??.??', [SCHEMA, name])
    })
  }
  return doomed
}
