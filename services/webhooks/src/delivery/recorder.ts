import { GroupCommit } from '@clinic/platform'
import type { JobStore, Outcome } from './job-store'

/** The most outcomes one transaction writes. */
const MAX_BATCH = 200

/**
 * Attempt outcomes in group commits (the platform's GroupCommit): each `record` resolves when its
 * outcome is committed (true), or was not written because its lease was lost (false); it rejects
 * when the transaction failed (the caller retries).
 */
export class Recorder {
  private readonly commits: GroupCommit<Outcome, boolean>

  constructor(store: Pick<JobStore, 'record'>) {
    this.commits = new GroupCommit(async (batch) => {
      const written = await store.record(batch)
      return batch.map((o) => written.has(o.job.id))
    }, MAX_BATCH)
  }

  record(o: Outcome): Promise<boolean> {
    return this.commits.submit(o)
  }
}
