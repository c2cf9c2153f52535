import { randomUUID } from 'node:crypto'
import { hostname } from 'node:os'
import type { Knex } from 'knex'
import type { Logger } from 'pino'
import type { Bundle, Resource } from '@medplum/fhirtypes'
import { FHIR_BASE, JobRunner, traceOf, type Principal, type Span } from '@clinic/platform'
import { centerRecords, companyRecord } from '../db/fhir-identity'
import type { ExportJob, ExportLines, ExportStore, HeldSnapshot } from './export-store'
import { fetchFhir, type FhirUpstream } from '../fhir-upstream'
import { locationOf, organizationOf } from '../routes/fhir'

/** How long a run waits for older transactions to end before giving its slot back. */
const SETTLE_WAIT_MS = 2000

export interface ExportWorkerOptions {
  /** The identity schema (the company and its centers: Organization, Location). */
  knex: Knex
  store: ExportStore
  upstream: Omit<FhirUpstream, 'absolute'>
  log: Logger
  /** The clock retention is measured by (GATEWAY_CLOCK_FILE moves it in tests). */
  clock: () => Date
  retentionHours: number
  /** Resources a page asks a service for (EXPORT_PAGE_SIZE; at most 1000, a FHIR search's most). */
  pageSize: number
  /** How often to look for exports without being woken (default 1000 ms). */
  pollMs?: number
  /** Exports run at once by this process (default 1). */
  concurrency?: number
  /** Runs in a row that may fail before the export does (EXPORT_MAX_FAILURES; default 20). */
  maxFailures?: number
  /** The wait after a first failed run, doubled with each in a row up to a minute (default 1000 ms). */
  retryMs?: number
}

/** Statuses a page is asked again for: nothing about the export's request is wrong. */
const RETRIED = new Set([401, 408, 409, 429])

/** The service could not import the export's snapshot (its transaction is gone). */
class SnapshotLost extends Error {}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
const iso = (d: Date) => d.toISOString()

/** An OperationOutcome line of the manifest's `error` files. */
const outcomeLine = (type: string, status: number, body: unknown) =>
  JSON.stringify({
    resourceType: 'OperationOutcome',
    issue: [
      {
        severity: 'error',
        code: 'exception',
        diagnostics: `${type}: the service answered ${status}: ${JSON.stringify(body).slice(0, 500)}`,
      },
    ],
  })

/**
 * Runs the company's Bulk Data exports (DESIGN.md section 19), the one job design: an export is a
 * row of fhir_exports claimed with a lease; each run first waits until every transaction that
 * began before its transactionTime has ended, then asks each type's service for its resources
 * changed in (`_since`, transactionTime] as the caller (their company and centers; a Group export:
 * that center) a page at a time, and writes each page's lines with the job's position in one
 * transaction. A killed process's export is taken up where its last page left it, by any replica.
 */
export class ExportWorker extends JobRunner<ExportJob> {
  private readonly me = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`
  private readonly running = new Set<string>()
  /** The snapshot each export this process runs reads in, held across its runs. */
  private readonly snapshots = new Map<string, HeldSnapshot>()
  private readonly repo: ExportStore
  private lastPurge = 0

  constructor(private readonly o: ExportWorkerOptions) {
    super({ name: 'fhir-exports', concurrency: o.concurrency ?? 1, pollMs: o.pollMs ?? 1000, log: o.log })
    this.repo = o.store
  }

  protected async claimJobs(limit: number): Promise<ExportJob[]> {
    await this.purgeNow()
    return this.repo.claim(this.me, limit, [...this.running])
  }

  protected override causeOf(job: ExportJob) {
    return job.traceparent ? { traceparent: job.traceparent } : undefined
  }

  protected async runJob(job: ExportJob, span: Span): Promise<void> {
    this.running.add(job.id)
    try {
      await this.run(job, span)
    } catch (err) {
      // The database away, or a privilege missing (settled()): given back for later, not claimed
      // again at once. What the client reads says no more than that (the log has the error).
      this.o.log.error({ err, export_id: job.id }, 'a run of a fhir export failed; will retry')
      await this.failedRun(job, 'the export could not run (the gateway logged why)').catch(() => undefined)
    } finally {
      this.running.delete(job.id)
    }
  }

  /** Gives a failed run's export back for later, or ends it failed after too many in a row. */
  private async failedRun(job: ExportJob, reason: string) {
    const limit = this.o.maxFailures ?? 20
    const outcome = await this.repo.failedRun(job, this.me, reason, {
      limit,
      retryMs: this.o.retryMs ?? 1000,
    })
    if (outcome !== 'failed') return
    this.o.log.error({ export_id: job.id, failures: job.failures, reason }, 'fhir export failed')
    await this.letGo(job.id)
  }

  /** Removes exports past retention, once a minute at most. */
  private async purgeNow() {
    const now = this.o.clock().getTime()
    if (now - this.lastPurge < 60_000) return
    this.lastPurge = now
    const n = await this.repo.purge(new Date(now - this.o.retentionHours * 3_600_000))
    if (n) this.o.log.info({ removed: n }, 'fhir exports past retention removed')
  }

  /**
   * Releases what this process holds for exports no longer its own: on stop, and (in run) for an
   * export that ended, was deleted or was taken over.
   */
  override async stop(): Promise<void> {
    await super.stop()
    for (const id of [...this.snapshots.keys()]) await this.letGo(id)
  }

  private async letGo(id: string) {
    const held = this.snapshots.get(id)
    this.snapshots.delete(id)
    await held?.release()
  }

  private async run(job: ExportJob, span: Span) {
    const log = this.o.log.child({ export_id: job.id, trace_id: span.spanContext().traceId })
    let held = this.snapshots.get(job.id)
    if (!held?.alive() || held.id !== job.position.snapshot) {
      // Pages already written were read in a snapshot this run does not hold (this process or
      // another was killed, the database restarted, or another replica took the export over and
      // started it again): they go, and the export starts again at a new time.
      if (held) await this.letGo(job.id)
      if (job.checkpoint > 0 && !(await this.repo.restart(job, this.me))) return
      if (job.checkpoint > 0) log.info('the export starts again: the snapshot of its pages is gone')
      // Every transaction begun before the kick-off has ended first: the snapshot's transactionTime
      // (holdSnapshot) is then the kick-off or later, however long another transaction stays open.
      const until = new Date(job.transaction_time.getTime() + 1)
      const deadline = Date.now() + SETTLE_WAIT_MS
      while (!(await this.repo.settled(until))) {
        if (Date.now() > deadline) {
          log.info('transactions older than the export are still open; will look again')
          return this.repo.release(job, this.me, 250)
        }
        await sleep(20)
      }
      held = await this.repo.holdSnapshot()
      this.snapshots.set(job.id, held)
      if (!(await this.repo.begin(job, this.me, held))) return this.letGo(job.id)
    }
    const who = { auth: job.principal, requestId: job.request_id, traceparent: traceOf(span).traceparent }
    while (job.position.type < job.types.length) {
      const type = job.types[job.position.type]!
      const page = await this.page(job, who, type, job.position.cursor, held.id).catch((err: Error) => {
        log.warn({ err: err.message, type }, 'a page of the export could not be read; will retry')
        return err
      })
      if (page instanceof Error) {
        // The service could not read in the snapshot: the next run takes a new one and starts again.
        if (page instanceof SnapshotLost) await this.letGo(job.id)
        return this.failedRun(job, page.message)
      }
      const at = { settled: true, snapshot: held.id }
      const next = page.next
        ? { ...at, type: job.position.type, cursor: page.next }
        : { ...at, type: job.position.type + 1, cursor: null }
      if (!(await this.repo.checkpoint(job, this.me, next, page.writes))) {
        log.info('the export was deleted or taken over; this run stops')
        return this.letGo(job.id)
      }
    }
    if (await this.repo.finish(job, this.me)) log.info({ exported: job.exported }, 'fhir export completed')
    await this.letGo(job.id)
  }

  /** One page of a type in the export's window, as lines of each kind. */
  private async page(
    job: ExportJob,
    who: { auth: Principal; requestId: string; traceparent: string },
    type: string,
    cursor: string | null,
    snapshot: string,
  ): Promise<{ writes: ExportLines[]; next: string | null }> {
    if (type === 'Organization' || type === 'Location')
      return { writes: await this.own(job, type), next: null }
    const q = new URLSearchParams()
    if (job.since) q.append('_lastUpdated', `gt${iso(job.since)}`)
    q.append('_lastUpdated', `le${iso(job.transaction_time)}`)
    q.set('_sort', '_lastUpdated')
    q.set('_count', String(this.o.pageSize))
    q.set('_total', 'none')
    if (cursor) q.set('_cursor', cursor)
    const res = await fetchFhir(
      { ...this.o.upstream, absolute: job.base },
      who,
      `${FHIR_BASE}/${type}?${q}`,
      snapshot,
    )
    if (res.status === 409 && (res.body as { code?: string }).code === 'fhir_snapshot_gone')
      throw new SnapshotLost(`${type}: the service could not read in the export's snapshot`)
    // Passing (the database away, the service busy, an assertion that expired on the way under
    // load): tried again. Only an answer about the request itself is the manifest's error.
    if (RETRIED.has(res.status) || res.status >= 500)
      throw new Error(`${type}: the service answered ${res.status}`)
    if (res.status !== 200)
      return {
        writes: [
          { kind: 'error', type: 'OperationOutcome', lines: [outcomeLine(type, res.status, res.body)] },
        ],
        next: null,
      }
    const bundle = res.body as Bundle
    const output: string[] = []
    const deleted: string[] = []
    for (const e of bundle.entry ?? []) {
      const r = e.resource as Resource & { status?: string }
      // A deleted document stays on the record as `entered-in-error`: an increment lists it as
      // deleted, a full export leaves it out.
      if (r.resourceType === 'DocumentReference' && r.status === 'entered-in-error') {
        if (job.since) deleted.push(deletionLine(r))
      } else output.push(JSON.stringify(r))
    }
    const more = bundle.link?.find((l) => l.relation === 'next')?.url
    return {
      writes: [
        ...(output.length ? [{ kind: 'output' as const, type, lines: output }] : []),
        ...(deleted.length ? [{ kind: 'deleted' as const, type: 'Bundle', lines: deleted }] : []),
      ],
      next: more ? new URL(more).searchParams.get('_cursor') : null,
    }
  }

  /** The gateway's own types (the company, its centers) in the export's window. */
  private async own(job: ExportJob, type: 'Organization' | 'Location'): Promise<ExportLines[]> {
    const auth = job.principal
    const all: Resource[] =
      type === 'Organization'
        ? [await companyRecord(this.o.knex, auth.companyId)].flatMap((c) => (c ? [organizationOf(c)] : []))
        : (await centerRecords(this.o.knex, auth.companyId))
            .filter((c) => !auth.allowedCenters || auth.allowedCenters.includes(c.code))
            .map((c) => locationOf(auth.companyId, c))
    const upTo = iso(job.transaction_time)
    const lines = all
      .filter((r) => {
        const at = r.meta!.lastUpdated!
        return at <= upTo && (!job.since || at > iso(job.since))
      })
      .map((r) => JSON.stringify(r))
    return lines.length ? [{ kind: 'output', type, lines }] : []
  }
}

/** A `deleted` line (Bulk Data IG 2.0.0): a transaction Bundle with the resource's DELETE. */
const deletionLine = (r: Resource) =>
  JSON.stringify({
    resourceType: 'Bundle',
    type: 'transaction',
    entry: [{ request: { method: 'DELETE', url: `${r.resourceType}/${r.id}` } }],
  })
