import { JobRunner, traceOf, type Span } from '@clinic/platform'
import { traceOfCause, type Ctx } from '@clinic/platform/core'
import type { Logger } from 'pino'
import {
  WAITLIST_ACTOR,
  announceOffer,
  offerFreedTime,
  sweepLapsed,
  type OfferDeps,
} from './domain/waitlist-offers'
import type { WaitlistJob } from './domain/waitlist-store'

/** The channel the calendar's triggers notify when they queue freed time (migration 0009). */
export const WAITLIST_CHANNEL = 'appointments_waitlist'

/** Longer than a job's transaction: a lease that runs out means the worker died. */
const LEASE_MS = 30_000
/** A job that keeps failing (a bug, not an outage) is dropped after this many tries, logged. */
const MAX_ATTEMPTS = 20

/** The company's own work, done by the waitlist rather than by a person with a token. */
export function waitlistCtx(companyId: number, log: Logger, cause: { traceparent?: string } = {}): Ctx {
  return {
    auth: {
      companyId,
      userId: '',
      username: WAITLIST_ACTOR,
      tokenId: '',
      companyCenters: [],
      allowedCenters: null,
    },
    log,
    requestId: '',
    ...traceOfCause(cause),
  }
}

/**
 * The waitlist's job queue (DESIGN.md section 20; the one job design: rows claimed with a lease):
 * each pass first lets lapse what the clock has passed (offers, entries, holds: each company's in
 * its own transaction), then runs the due jobs, freed spans to offer and offers to announce.
 */
export class WaitlistWorker extends JobRunner<WaitlistJob> {
  constructor(
    private readonly o: OfferDeps & {
      log: Logger
      concurrency?: number
      pollMs?: number
      /** LISTEN for freed time (the jobs run at once, not at the next poll). */
      listen?: { databaseUrl: string }
    },
  ) {
    super({
      name: 'waitlist',
      concurrency: o.concurrency ?? 4,
      pollMs: o.pollMs ?? 1000,
      log: o.log,
      listen: o.listen && {
        databaseUrl: o.listen.databaseUrl,
        channel: WAITLIST_CHANNEL,
        name: 'appointments-waitlist',
      },
    })
  }

  protected async claimJobs(limit: number) {
    const now = this.o.clock()
    for (const companyId of await this.o.store.lapsedCompanies(now))
      await sweepLapsed(waitlistCtx(companyId, this.o.log), this.o).catch((err: unknown) =>
        this.o.log.warn({ err, company_id: companyId }, 'waitlist sweep failed; will retry'),
      )
    return this.o.store.claimJobs(now, limit, LEASE_MS)
  }

  protected override causeOf(job: WaitlistJob) {
    return job.traceparent ? { traceparent: job.traceparent } : undefined
  }

  protected async runJob(job: WaitlistJob, span: Span): Promise<void> {
    const log = this.o.log.child({ trace_id: span.spanContext().traceId, waitlist_job_id: job.id })
    const ctx = waitlistCtx(job.companyId, log, traceOf(span))
    try {
      if (job.kind === 'announce') await announceOffer(ctx, this.o.store, job)
      else {
        const offered = await offerFreedTime(ctx, this.o, job)
        log.info(
          { practitioner: job.practitioner, codalmacen: job.codalmacen, offered },
          'freed time offered',
        )
      }
    } catch (err) {
      // comms or the database away: the lease runs out and the job is claimed again.
      if (job.attempts >= MAX_ATTEMPTS) {
        log.error({ err }, 'waitlist job failed too often; dropped')
        await this.o.store.transaction(job.companyId, (tx) => tx.finishJob(job.id))
      } else log.warn({ err }, 'waitlist job failed; will retry')
    }
  }
}
