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
  /** A pass asked for before `minIntervalMs` was over: it starts when it is. */
  private delayed: NodeJS.Timeout | null = null
  private lastStart = 0

  constructor(
    private readonly o: {
      pass: () => Promise<unknown>
      pollMs: number
      /** A pass that threw: the next wake or poll tries again. */
      onError: (err: unknown) => void
      /**
       * The least time between the starts of two passes (default 0): under a stream of wakes (a
       * commit each), one pass then covers what several of them announced, at most this much later.
       */
      minIntervalMs?: number
    },
  ) {}

  start(): void {
    this.timer = setInterval(() => this.wake(), this.o.pollMs)
    this.timer.unref()
    this.wake()
  }

  wake(): void {
    if (this.stopped || this.delayed) return
    if (this.running) {
      this.again = true
      return
    }
    const wait = this.lastStart + (this.o.minIntervalMs ?? 0) - Date.now()
    if (wait > 0) {
      this.delayed = setTimeout(() => {
        this.delayed = null
        this.wake()
      }, wait)
      this.delayed.unref()
      return
    }
    this.startPass()
  }

  private startPass(): void {
    this.lastStart = Date.now()
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
    return this.running !== null || this.delayed !== null
  }

  get stopping(): boolean {
    return this.stopped
  }

  /** Resolves when no pass is under way or asked for (one waiting for its interval starts now). */
  async settled(): Promise<void> {
    if (this.delayed) {
      clearTimeout(this.delayed)
      this.delayed = null
      if (!this.running) this.startPass()
    }
    while (this.running) await this.running
  }

  /** No pass after this one (or the one asked for): the poll ends, wakes do nothing; resolves when the last pass is over. */
  async stop(): Promise<void> {
    this.stopped = true
    if (this.timer) clearInterval(this.timer)
    await this.settled()
  }
}
