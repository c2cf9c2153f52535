import type { Logger } from 'pino'
import { endSpan, startSpan, type Span, type TraceText } from './tracing'
import { Listener } from './listener'
import { WakeLoop } from './wake-loop'

export interface JobRunnerOptions {
  /** What the jobs are, for the logs ('deliveries', 'reminders'). */
  name: string
  /** Jobs in flight at once in this process. */
  concurrency: number
  /** How often to look for due jobs without being woken (a notification can be lost). */
  pollMs: number
  /**
   * Claim only when at least this many slots are free (while jobs are in flight): fewer, fuller
   * claims under load. Default 1.
   */
  minClaim?: number
  log: Logger
  /**
   * A PostgreSQL channel whose notifications wake the runner (LISTEN on a connection of its own,
   * named `name` in pg_stat_activity): work is claimed at once, not at the next poll.
   */
  listen?: { databaseUrl: string; channel: string; name: string }
}

/**
 * The one job queue of the services (webhook deliveries, reminders): due rows of the job's own
 * table, claimed with a lease. This is the process side, which a worker extends with its claim
 * and its job: it claims what it has room for, runs each job, claims again as soon as a slot frees
 * or `wake()` is called (a NOTIFY, a moved clock), and polls for the rest. No timers hold work:
 * everything pending is in the table.
 */
export abstract class JobRunner<J> {
  private inFlight = new Set<Promise<void>>()
  private readonly loop: WakeLoop
  private readonly listener: Listener | null

  constructor(private readonly runner: JobRunnerOptions) {
    this.loop = new WakeLoop({
      pass: () => this.claimAndRun(),
      pollMs: runner.pollMs,
      onError: (err) => runner.log.warn({ err }, `claiming ${runner.name} failed; will retry`),
    })
    this.listener = runner.listen
      ? new Listener({
          ...runner.listen,
          log: runner.log,
          retryMs: runner.pollMs,
          onNotify: () => this.wake(),
        })
      : null
  }

  /**
   * Claims at most `limit` due jobs in PostgreSQL (`FOR UPDATE SKIP LOCKED`, each leased to this
   * process for a while): what the database hands out is the queue, so a restart loses nothing and
   * a job whose process died is claimed again when its lease runs out.
   */
  protected abstract claimJobs(limit: number): Promise<J[]>
  /**
   * Does one claimed job and writes its outcome (while its lease is still its own). `span`: the
   * job's run, the child of its cause (`causeOf`): its log lines name its `trace_id`, and what it
   * emits or calls is its child.
   */
  protected abstract runJob(job: J, span: Span): Promise<void>
  /**
   * The trace context of what caused a job, kept with its row (the span of the request or the
   * consumer that queued it): each run of the job is a span in that trace. None: a trace of its own.
   */
  protected causeOf(_job: J): TraceText | undefined {
    return undefined
  }

  start(): this {
    void this.listener?.start()
    this.loop.start()
    return this
  }

  /** Looks for due jobs now (or right after the look under way). */
  wake(): void {
    this.loop.wake()
  }

  /** Resolves when nothing is claimed or in flight (tests: move the clock, wake(), await idle()). */
  async idle(): Promise<void> {
    while (this.loop.busy || this.inFlight.size) await Promise.all([this.loop.settled(), ...this.inFlight])
  }

  /** Claims no more, and waits for the jobs in flight. */
  async stop(): Promise<void> {
    await this.loop.stop()
    await this.idle()
    await this.listener?.stop()
  }

  private async claimAndRun() {
    const free = this.runner.concurrency - this.inFlight.size
    if (free <= 0 || (this.inFlight.size > 0 && free < (this.runner.minClaim ?? 1))) return
    const jobs = await this.claimJobs(free)
    for (const job of jobs) {
      const span = startSpan(`run ${this.runner.name}`, { parent: this.causeOf(job) })
      const p: Promise<void> = this.runJob(job, span)
        .then(
          () => endSpan(span),
          (err: unknown) => {
            endSpan(span, err)
            this.runner.log.error(
              { err, trace_id: span.spanContext().traceId },
              `a claimed job of ${this.runner.name} failed`,
            )
          },
        )
        .finally(() => {
          this.inFlight.delete(p)
          this.wake()
        })
      this.inFlight.add(p)
    }
    // As many as there was room for: there may be more due now.
    if (jobs.length === free) this.wake()
  }
}
