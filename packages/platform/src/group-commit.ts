/**
 * Group commit: what is submitted while a batch is being written goes into the next one, so under
 * load one transaction (one WAL flush, one pass over a hot row) covers many items, and alone an
 * item is written at once. `write` gets a batch (at most `max`) and answers one result per item,
 * in order; each `submit` resolves with its item's result, or rejects when its batch's write failed.
 */
export class GroupCommit<I, R> {
  private waiting: Array<{ item: I; done?: (r: R) => void; fail?: (err: unknown) => void }> = []
  private writing: Promise<void> | null = null

  constructor(
    private readonly write: (batch: I[]) => Promise<R[]>,
    private readonly max = 200,
  ) {}

  submit(item: I): Promise<R> {
    return new Promise((done, fail) => {
      this.waiting.push({ item, done, fail })
      this.kick()
    })
  }

  /**
   * Items nobody waits for (a retry, a background count): written as submitted ones are, with no
   * promise each; a write that fails tells no one, so its `write` must keep what it could not write.
   */
  push(items: readonly I[]): void {
    for (const item of items) this.waiting.push({ item })
    this.kick()
  }

  /** Items not yet in a write. */
  get pending(): number {
    return this.waiting.length
  }

  /** Resolves when nothing is waiting or being written. */
  async idle(): Promise<void> {
    while (this.writing) await this.writing
  }

  private kick() {
    if (this.writing || !this.waiting.length) return
    const batch = this.waiting.splice(0, this.max)
    this.writing = this.write(batch.map((b) => b.item))
      .then(
        (results) => batch.forEach((b, i) => b.done?.(results[i]!)),
        (err: unknown) => batch.forEach((b) => b.fail?.(err)),
      )
      .finally(() => {
        this.writing = null
        this.kick()
      })
  }
}
