/**
 * The loop of the background workers (the job runner, the outbox relay): one pass at a time;
 * `wake()` starts one now, or one more right after the pass under way (however many wakes came
 * meanwhile); a poll wakes it every `pollMs` for what no wake announced (a lost notification, a
 * broker back, a job come due). What the pass does is its owner's; what is pending lives in
 * PostgreSQL, never here.
 */
export class WakeLoop {
  private running: Promise<void> | null = null
  private again = false
  private stopped = false
  private timer: NodeJS.Timeout | null = null

  constructor(
    private readonly o: {
      pass: () => Promise<unknown>
      pollMs: number
      /** A pass that threw: the next wake or poll tries again. */
      onError: (err: unknown) => void
    },
  ) {}

  start(): void {
    this.timer = setInterval(() => this.wake(), this.o.pollMs)
    this.timer.unref()
    this.wake()
  }

  wake(): void {
    if (this.stopped) return
    if (this.running) {
      this.again = true
      return
    }
    this.running = this.o
      .pass()
      .then(() => undefined, this.o.onError)
      .finally(() => {
        this.running = null
        if (this.again) {
          this.again = false
          this.wake()
        }
      })
  }

  get busy(): boolean {
    return this.running !== null
  }

  get stopping(): boolean {
    return this.stopped
  }

  /** Resolves when no pass is under way or asked for. */
  async settled(): Promise<void> {
    while (this.running) await this.running
  }

  /** No pass after this one: the poll ends, wakes do nothing; resolves when the last pass is over. */
  async stop(): Promise<void> {
    this.stopped = true
    if (this.timer) clearInterval(this.timer)
    await this.settled()
  }
}
