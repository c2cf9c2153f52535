import { GroupCommit } from '@clinic/platform'
import type { Knex } from 'knex'
import { recordAttempts, type Outcome } from '../db/repositories/worker-repository'

/** The most outcomes one transaction writes. */
const MAX_BATCH = 200

/**
 * Attempt outcomes in group commits (the platform's GroupCommit): each `record` resolves when its
 * outcome is committed (true), or was not written because its lease was lost (false); it rejects
 * when the transaction failed (the caller retries).
 */
export class Recorder {
  private readonly commits: GroupCommit<Outcome, boolean>

  constructor(knex: Knex) {
    this.commits = new GroupCommit(async (batch) => {
      const written = await recordAttempts(knex, batch)
      return batch.map((o) => written.has(o.job.id))
    }, MAX_BATCH)
  }

  record(o: Outcome): Promise<boolean> {
    return this.commits.submit(o)
  }
}
