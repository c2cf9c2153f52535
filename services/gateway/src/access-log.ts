import type { Knex } from 'knex'
import type { Logger } from 'pino'
import { enqueueEvents, isUuid, makeEvent, type CloudEvent, type Principal } from '@clinic/platform'
import { RESOURCE_TYPES } from './families'

/** `/api/3/patients/<id>/...` -> { resource_type: 'patient', resource_id: '<id>' } */
export function resourceOf(path: string): { resource_type: string | null; resource_id: string | null } {
  const parts = path.replace(/^\/api(\/3|\/v\d+)?\//, '').split('/')
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
  principal: Principal
  codalmacen: string | null
}

/**
 * `http.request` events for the audit trail (and `http.refused` counts, see refused()), written to the gateway's outbox (so a broker outage
 * loses none) before the answer is released: a group commit. `record()` resolves once the
 * transaction holding the event has committed; events recorded while a write is under way go
 * together in the next one, so a request waits one short insert, whatever the load, and an
 * answered request always has its event (a SIGKILL loses none). While the database is away the
 * answer is not held hostage: `record()` resolves, the events stay buffered (up to `maxBuffered`)
 * and are written again every `retryMs`.
 */
export class AccessLog {
  private buffer: Array<{ event: CloudEvent; done: () => void }> = []
  /** Refused requests per company, address and minute, until their minute ends. */
  private refusals = new Map<
    string,
    { companyId: number; ip: string; windowStart: number; count: number; paths: Set<string> }
  >()
  private writing: Promise<void> | null = null
  private timer: NodeJS.Timeout

  constructor(
    private readonly knex: Knex,
    private readonly log: Logger,
    private readonly opts: { retryMs?: number; maxBatch?: number; maxBuffered?: number } = {},
  ) {
    this.timer = setInterval(() => {
      this.closeRefusals()
      void this.flush()
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
    const windowStart = now - (now % 60_000)
    const companyId = r.companyId ?? 0
    const key = `${companyId}|${r.ip}|${windowStart}`
    let w = this.refusals.get(key)
    if (!w) {
      if (this.refusals.size >= (this.opts.maxBuffered ?? 50_000)) return
      this.refusals.set(key, (w = { companyId, ip: r.ip, windowStart, count: 0, paths: new Set() }))
    }
    w.count++
    if (w.paths.size < 10) w.paths.add(r.path)
  }

  /** Turns the refusals of minutes that are over (all of them on close) into events. */
  private closeRefusals(all = false, now = Date.now()) {
    for (const [key, w] of this.refusals) {
      if (!all && w.windowStart + 60_000 > now) continue
      this.refusals.delete(key)
      const event = makeEvent({
        type: 'http.refused',
        source: 'clinic/gateway',
        companyId: w.companyId,
        data: {
          ip: w.ip,
          count: w.count,
          window_start: new Date(w.windowStart).toISOString(),
          paths: [...w.paths],
        },
      })
      this.buffer.push({ event, done: () => undefined })
    }
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
      ctx: { auth: r.principal, requestId: r.requestId },
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
    if (this.buffer.length >= (this.opts.maxBuffered ?? 50_000)) {
      this.log.error('access log buffer full (database down?); dropping an access event')
      return Promise.resolve()
    }
    return new Promise((done) => {
      this.buffer.push({ event, done })
      void this.flush()
    })
  }

  /**
   * Writes what is buffered, one statement per batch (atomic by itself: no BEGIN/COMMIT round
   * trips); returns when nothing is left to try.
   */
  flush(): Promise<void> {
    this.writing ??= this.writeAll().finally(() => (this.writing = null))
    return this.writing
  }

  private async writeAll(): Promise<void> {
    while (this.buffer.length) {
      const batch = this.buffer.splice(0, this.opts.maxBatch ?? 500)
      try {
        await enqueueEvents(
          this.knex,
          batch.map((b) => b.event),
        )
      } catch (err) {
        // Kept for the retry timer; the answers go out meanwhile.
        this.buffer.unshift(...batch.map((b) => ({ event: b.event, done: () => undefined })))
        for (const b of batch) b.done()
        // { err } goes through the platform's serializer: a database error is logged from an
        // allow-list, never its message (knex puts the statement's bound values in it).
        this.log.warn({ err, pending: this.buffer.length }, 'access log write failed; will retry')
        return
      }
      for (const b of batch) b.done()
    }
  }

  /** Every refusal counted so far out as events now, minute over or not (shutdown, tests). */
  flushRefusals(): Promise<void> {
    this.closeRefusals(true)
    return this.flush()
  }

  async close(): Promise<void> {
    clearInterval(this.timer)
    this.closeRefusals(true)
    await this.writing
    await this.flush()
  }
}
