/**
 * Group commit: what is submitted while a batch is being written goes into the next one, so under
 * load one transaction (one WAL flush, one pass over a hot row) covers many items, and alone an
 * item is written at once. `write` gets a batch (at most `max`) and answers one result per item,
 * in order; each `submit` resolves with its item's result, or rejects when its batch's write failed.
 * With `lingerMs`, an item that finds nothing being written waits that long for others (a consumer's
 * messages come in bursts) unless a full batch is there first; what came during a write still goes
 * right after it.
 */
export class GroupCommit<I, R> {
  private waiting: Array<{ item: I; done?: (r: R) => void; fail?: (err: unknown) => void }> = []
  private writing: Promise<void> | null = null
  private linger: NodeJS.Timeout | null = null
  /** A partial batch may go without lingering (its linger is over, or it waited on a write). */
  private due = false

  constructor(
    private readonly write: (batch: I[]) => Promise<R[]>,
    private readonly max = 200,
    private readonly lingerMs = 0,
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

  /** Resolves when nothing is waiting or being written (a lingering batch goes now). */
  async idle(): Promise<void> {
    if (!this.writing && this.waiting.length) {
      this.due = true
      this.kick()
    }
    while (this.writing) await this.writing
  }

  private kick() {
    if (this.writing || !this.waiting.length) return
    if (this.lingerMs > 0 && this.waiting.length < this.max && !this.due) {
      this.linger ??= setTimeout(() => {
        this.linger = null
        this.due = true
        this.kick()
      }, this.lingerMs)
      return
    }
    if (this.linger) clearTimeout(this.linger)
    this.linger = null
    this.due = false
    const batch = this.waiting.splice(0, this.max)
    this.writing = this.write(batch.map((b) => b.item))
      .then(
        (results) => batch.forEach((b, i) => b.done?.(results[i]!)),
        (err: unknown) => batch.forEach((b) => b.fail?.(err)),
      )
      .finally(() => {
        this.writing = null
        this.due = this.waiting.length > 0
        this.kick()
      })
  }
}
