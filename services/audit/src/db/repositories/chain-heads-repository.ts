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

export const chainHeadsRepository = (knex: Knex): ChainHeadSource => ({ all: () => readChainHeads(knex) })
