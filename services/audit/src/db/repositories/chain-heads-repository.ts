import type { Knex } from 'knex'
import type { ChainHeadSource, CheckpointHead } from '../../domain/checkpoint'

/**
 * Every company's chain head, read in one statement (one snapshot): what a checkpoint records.
 * The service role may SELECT chain_heads (audit migration 0001; 0002 took only its writes away).
 */
export async function readChainHeads(knex: Knex): Promise<CheckpointHead[]> {
  const rows = await knex('chain_heads')
    .select<Array<{ idempresa: number; seq: string | number; hash: string }>>('idempresa', 'seq', 'hash')
    .orderBy('idempresa')
  return rows.map((r) => ({ idempresa: r.idempresa, seq: Number(r.seq), hash: r.hash }))
}

/**
 * `pg:<system identifier>/<database oid>`. The cluster's system identifier (made by initdb, kept by
 * restarts and physical standbys) tells clusters apart, the oid the databases of one cluster: a
 * database dropped and created again under the same name gets another oid. Neither is a row the
 * database owner could rewrite to make verification ignore the checkpoints of a trail it cut.
 * Anyone may read both (pg_control_system is granted to PUBLIC).
 */
export async function readDatabaseIdentity(knex: Knex): Promise<string> {
  const { rows } = await knex.raw<{ rows: Array<{ system: string; oid: string }> }>(
    `SELECT (pg_control_system()).system_identifier::text AS system, d.oid::text AS oid
       FROM pg_database d WHERE d.datname = current_database()`,
  )
  const row = rows[0]
  if (!row) throw new Error('the current database is not in pg_database')
  return `pg:${row.system}/${row.oid}`
}

export const chainHeadsRepository = (knex: Knex): ChainHeadSource => ({
  all: () => readChainHeads(knex),
  database: () => readDatabaseIdentity(knex),
})
