import type { Knex } from 'knex'
import { recordAttempts, type Outcome } from '../db/repositories/worker-repository'

/** The most outcomes one transaction writes. */
const MAX_BATCH = 200

/**
 * Group commit for attempt outcomes: what arrives while a batch is being written goes in the next
 * one, so under load one commit (one WAL flush) covers many deliveries, and alone an outcome is
 * written at once. Each `record` resolves when its outcome is committed (true), or was not written
 * because its lease was lost (false); it rejects when the transaction failed (the caller retries).
 */
export class Recorder {
  private waiting: Array<Outcome & { done: (kept: boolean) => void; fail: (err: unknown) => void }> = []
  private writing: Promise<void> | null = null

  constructor(private readonly knex: Knex) {}

  record(o: Outcome): Promise<boolean> {
    return new Promise((done, fail) => {
      this.waiting.push({ ...o, done, fail })
      this.kick()
    })
  }

  private kick() {
    if (this.writing || !this.waiting.length) return
    const batch = this.waiting.splice(0, MAX_BATCH)
    this.writing = recordAttempts(this.knex, batch)
      .then(
        (written) => batch.forEach((o) => o.done(written.has(o.job.id))),
        (err: unknown) => batch.forEach((o) => o.fail(err)),
      )
      .finally(() => {
        this.writing = null
        this.kick()
      })
  }
}
