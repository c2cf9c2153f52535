import type { Knex } from 'knex'
import type { Logger } from 'pino'
import { enqueueEvents, isUuid, makeEvent, type CloudEvent, type Principal } from '@clinic/platform'

/** Resource families of the API and the resource type their ids name. */
const RESOURCE_TYPES: Record<string, string> = {
  patients: 'patient',
  appointments: 'appointment',
  comms: 'message',
  audit: 'audit_event',
  documents: 'document',
  consents: 'consent',
  clinical: 'clinical',
}

/** `/api/3/patients/<id>/...` -> { resource_type: 'patient', resource_id: '<id>' } */
export function resourceOf(path: string): { resource_type: string | null; resource_id: string | null } {
  const parts = path.replace(/^\/api(\/3|\/v\d+)?\//, '').split('/')
  const type = RESOURCE_TYPES[parts[0] ?? ''] ?? null
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
  principal: Principal | null
  /** The company of a token that was found but refused (revoked, expired); 0 when unknown. */
  companyId: number
  codalmacen: string | null
}

/**
 * `http.request` events for the audit trail, kept off the request path: records are buffered
 * in memory and written in batches to the gateway's outbox (so a broker outage loses none), from
 * where the relay publishes them. Only a crash loses the last batch (at most `flushMs`).
 */
export class AccessLog {
  private buffer: CloudEvent[] = []
  private timer: NodeJS.Timeout
  private flushing: Promise<void> = Promise.resolve()

  constructor(
    private readonly knex: Knex,
    private readonly log: Logger,
    private readonly opts: { flushMs?: number; maxBatch?: number; maxBuffered?: number } = {},
  ) {
    this.timer = setInterval(() => void this.flush(), opts.flushMs ?? 200)
    this.timer.unref()
  }

  record(r: AccessRecord): void {
    const { resource_type, resource_id } = resourceOf(r.path)
    const event = makeEvent({
      type: 'http.request',
      source: 'clinic/gateway',
      subject: resource_id ?? undefined,
      companyId: r.principal?.companyId ?? r.companyId,
      codalmacen: r.codalmacen,
      ctx: r.principal ? { auth: r.principal, requestId: r.requestId } : undefined,
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
    if (!r.principal) event.requestid = r.requestId
    if (this.buffer.length >= (this.opts.maxBuffered ?? 50_000)) {
      this.log.error('access log buffer full (database down?); dropping an access event')
      return
    }
    this.buffer.push(event)
    if (this.buffer.length >= (this.opts.maxBatch ?? 500)) void this.flush()
  }

  /** Writes what is buffered; on failure the batch goes back and is retried. */
  flush(): Promise<void> {
    this.flushing = this.flushing.then(async () => {
      while (this.buffer.length) {
        const batch = this.buffer.splice(0, this.opts.maxBatch ?? 500)
        try {
          await this.knex.transaction((trx) => enqueueEvents(trx, batch))
        } catch (err) {
          this.buffer.unshift(...batch)
          this.log.warn(
            { err: (err as Error).message, pending: this.buffer.length },
            'access log write failed; will retry',
          )
          return
        }
      }
    })
    return this.flushing
  }

  async close(): Promise<void> {
    clearInterval(this.timer)
    await this.flush()
  }
}
