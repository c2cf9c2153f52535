import type { Knex } from 'knex'
import type { Logger } from 'pino'
import {
  GroupCommit,
  isUuid,
  makeEvent,
  type CloudEvent,
  type Principal,
  type TraceHeaders,
} from '@clinic/platform'
import { writeAccessBatch } from './db/access-outbox'
import { FHIR_TYPES, RESOURCE_TYPES, isExportPath } from './families'

/**
 * `/api/3/patients/<id>/...` -> { resource_type: 'patient', resource_id: '<id>' }; under the FHIR base
 * the FHIR type's (`/api/fhir/R4/VisionPrescription/<id>` -> `vision_prescription`); a Bulk Data
 * export's kick-off, status and files are `fhir_export` (with the export's id past the kick-off).
 */
export function resourceOf(path: string): { resource_type: string | null; resource_id: string | null } {
  const parts = path.replace(/^\/api(\/3|\/v\d+)?\//, '').split('/')
  if (parts[0] === 'fhir' && parts[1] === 'R4') {
    // Bulk Data: a kick-off at any level, an export's status and its files.
    if (isExportPath(parts))
      return {
        resource_type: 'fhir_export',
        resource_id: parts[2] === '$export' && isUuid(parts[3] ?? '') ? parts[3]! : null,
      }
    const fhir = FHIR_TYPES.get(parts[2] ?? '')
    return { resource_type: fhir?.resourceType ?? null, resource_id: parts.slice(3).find(isUuid) ?? null }
  }
  const type = RESOURCE_TYPES.get(parts[0] ?? '') ?? null
  const id = parts.slice(1).find(isUuid) ?? null
  return { resource_type: type, resource_id: id }
}

export interface AccessRecord {
  method: string
  path: string
  status: number
  durationMs: number
  ip: string
  requestId: string
  /** The request's server span: the access event is its child (as its audit record's handling). */
  trace?: TraceHeaders
  principal: Principal
  codalmacen: string | null
}

/** Requests counted rather than recorded one by one, per key and minute (AccessLog.refused/publicRequest). */
interface Counted {
  type: 'http.refused' | 'http.public'
  companyId: number
  ip: string
  /** http.public: the method and status the count is of. */
  method: string
  status: number
  windowStart: number
  count: number
  paths: Set<string>
}

/**
 * `http.request` events for the audit trail (and `http.refused` / `http.public` counts, see
 * refused() and publicRequest()), written to the gateway's outbox (so a broker outage
 * loses none) before the answer is released: a group commit, whose events go out as one
 * `http.batch` event (one outbox row, one message, one signature). `record()` resolves once the
 * transaction holding the event has committed; events recorded while a write is under way go
 * together in the next one, so a request waits one short insert, whatever the load, and an
 * answered request always has its event (a SIGKILL loses none). While the database is away the
 * answer is not held hostage: `record()` resolves, the events stay buffered (up to `maxBuffered`)
 * and are written again every `retryMs`. The batching is the platform's GroupCommit.
 */
export class AccessLog {
  private readonly commits: GroupCommit<CloudEvent, void>
  /** Events whose write failed (the database away), written again every `retryMs`. */
  private failed: CloudEvent[] = []
  /** Refused and public requests per key and minute, until their minute ends. */
  private counts = new Map<string, Counted>()
  private timer: NodeJS.Timeout

  constructor(
    private readonly knex: Knex,
    private readonly log: Logger,
    private readonly opts: { retryMs?: number; maxBatch?: number; maxBuffered?: number } = {},
  ) {
    this.commits = new GroupCommit((batch) => this.write(batch), opts.maxBatch ?? 500)
    this.timer = setInterval(() => {
      this.closeCounts()
      this.retry()
    }, opts.retryMs ?? 1000)
    this.timer.unref()
  }

  /**
   * A request refused before it had a principal: counted, not recorded one by one (a flood of
   * guessed, revoked or expired tokens would otherwise write a row each). One `http.refused` event
   * per company, client address and minute goes out when the minute is over, with the count and up
   * to ten paths: under the company of a token that was found but refused (revoked, expired, another
   * user's), else under company 0 (no token, an unknown one, or refused before the check).
   */
  refused(r: { ip: string; path: string; companyId?: number }, now = Date.now()): void {
    this.count({ type: 'http.refused', companyId: r.companyId ?? 0, method: '', status: 0, ...r }, now)
  }

  /**
   * A request that reached the API without a token on purpose: a provider's callback (its
   * signature is the service's to check) or a CORS preflight. Counted as refusals are, one
   * `http.public` event per method, status, client address and minute, under company 0 (no token,
   * no company): whoever calls the API is on the trail, and a flood of them writes no row each.
   */
  publicRequest(r: { method: string; status: number; ip: string; path: string }, now = Date.now()): void {
    this.count({ type: 'http.public', companyId: 0, ...r }, now)
  }

  private count(r: Omit<Counted, 'windowStart' | 'count' | 'paths'> & { path: string }, now: number): void {
    const windowStart = now - (now % 60_000)
    const key = [r.type, r.companyId, r.method, r.status, r.ip, windowStart].join('|')
    let w = this.counts.get(key)
    if (!w) {
      if (this.counts.size >= (this.opts.maxBuffered ?? 50_000)) return
      const { path: _path, ...rest } = r
      this.counts.set(key, (w = { ...rest, windowStart, count: 0, paths: new Set() }))
    }
    w.count++
    if (w.paths.size < 10) w.paths.add(r.path)
  }

  /** Turns the counts of minutes that are over (all of them on close) into events. */
  private closeCounts(all = false, now = Date.now()) {
    const events: CloudEvent[] = []
    for (const [key, w] of this.counts) {
      if (!all && w.windowStart + 60_000 > now) continue
      this.counts.delete(key)
      const counted = {
        ip: w.ip,
        count: w.count,
        window_start: new Date(w.windowStart).toISOString(),
        paths: [...w.paths],
      }
      const event =
        w.type === 'http.refused'
          ? makeEvent({ type: w.type, source: 'clinic/gateway', companyId: w.companyId, data: counted })
          : makeEvent({
              type: w.type,
              source: 'clinic/gateway',
              companyId: 0,
              data: { method: w.method, status: w.status, ...counted },
            })
      events.push(event)
    }
    if (events.length) this.commits.push(events)
  }

  /** Resolves when the event is committed (or kept for a retry while the database is away). */
  record(r: AccessRecord): Promise<void> {
    const { resource_type, resource_id } = resourceOf(r.path)
    const event = makeEvent({
      type: 'http.request',
      source: 'clinic/gateway',
      subject: resource_id ?? undefined,
      companyId: r.principal.companyId,
      codalmacen: r.codalmacen,
      ctx: { auth: r.principal, requestId: r.requestId, ...r.trace },
      data: {
        method: r.method,
        path: r.path,
        status: r.status,
        duration_ms: Math.round(r.durationMs * 100) / 100,
        ip: r.ip,
        resource_type,
        resource_id,
      },
    })
    if (this.commits.pending + this.failed.length >= (this.opts.maxBuffered ?? 50_000)) {
      this.log.error('access log buffer full (database down?); dropping an access event')
      return Promise.resolve()
    }
    return this.commits.submit(event)
  }

  /**
   * One group commit's events, one statement (atomic by itself: no BEGIN/COMMIT round trips). A
   * failure keeps them for the retry timer and lets the answers go out meanwhile.
   */
  private async write(batch: CloudEvent[]): Promise<void[]> {
    try {
      // One outbox row, one message and one signature for the batch (http.batch); audit records
      // each of its events as a row of the trail.
      await writeAccessBatch(this.knex, batch)
    } catch (err) {
      this.failed.push(...batch)
      // { err } goes through the platform's serializer: a database error is logged from an
      // allow-list, never its message (knex puts the statement's bound values in it).
      this.log.warn({ err, pending: this.failed.length }, 'access log write failed; will retry')
    }
    return new Array<void>(batch.length)
  }

  /** The events whose write failed, into the next group commit. */
  private retry() {
    if (!this.failed.length) return
    const again = this.failed
    this.failed = []
    this.commits.push(again)
  }

  /** Writes what is buffered (once more for what failed); returns when nothing is left to try. */
  flush(): Promise<void> {
    this.retry()
    return this.commits.idle()
  }

  /** Every refusal and public request counted so far out as events now, minute over or not (shutdown, tests). */
  flushRefusals(): Promise<void> {
    this.closeCounts(true)
    return this.flush()
  }

  async close(): Promise<void> {
    clearInterval(this.timer)
    this.closeCounts(true)
    await this.flush()
  }
}
