import { JobRunner } from '@clinic/platform'
import { ctxOfCause } from '@clinic/platform/core'
import type { Logger } from 'pino'
import type { ConsentStore } from '../domain/consent-store'
import { expireConsent } from '../domain/expire-consent'

/** Who expires consents, on the audit trail (the events' actor). */
export const EXPIRY_ACTOR = 'documents-expiry'

/**
 * Expires pending consents past `expires_at` (DESIGN.md section 16) through the house's job queue
 * (platform JobRunner): the due rows are the queue, read from PostgreSQL at each pass (a restart
 * loses nothing), each expired in its company's transaction under a row lock, so two workers never
 * expire one twice. The clock is injected: tests move it and `wake()`.
 */
export class ConsentExpiryWorker extends JobRunner<{ companyId: number; id: string }> {
  constructor(private readonly o: { store: ConsentStore; clock: () => Date; log: Logger; pollMs?: number }) {
    super({ name: 'consent expiries', concurrency: 4, pollMs: o.pollMs ?? 30_000, log: o.log })
  }

  protected claimJobs(limit: number) {
    return this.o.store.due(this.o.clock(), limit)
  }

  protected async runJob(job: { companyId: number; id: string }) {
    const ctx = ctxOfCause(
      { companyId: job.companyId, cause: { actorname: EXPIRY_ACTOR } },
      this.o.log.child({ company_id: job.companyId }),
    )
    if (await expireConsent(ctx, this.o.store, { id: job.id, now: this.o.clock() }))
      ctx.log.info({ consent_id: job.id }, 'consent expired')
  }
}
