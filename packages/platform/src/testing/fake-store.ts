import pino from 'pino'
import type { Principal } from '../principal'
import type { Ctx } from '../context'
import { IdempotencyConflict, ValidationFailed } from '../errors'
import type { CloudEvent } from '../events'
import type { IdempotencyKey, StoredResponse, TenantStore } from '../tenant-store'

/** What a fake `Tx` works on: one company's rows and outbox, inside one transaction. */
export interface FakeScope<Row> {
  readonly companyId: number
  /** A copy of the row of this company, or null. */
  get(id: string): Row | null
  /** Every row of this company (copies), in insertion order. */
  all(): Row[]
  /** Writes the row (kept only if the transaction commits); returns a copy. */
  put(row: Row): Row
  /** Adds events to the outbox (kept only if the transaction commits). */
  publish(events: CloudEvent[]): void
}

const KEY = /^[\x21-\x7e]{1,255}$/
const copy = <T>(v: T): T => structuredClone(v)

/**
 * A tenant store in memory, for unit tests of use cases without PostgreSQL (as immich's
 * newTestService): rows per company, transactions that keep nothing when they throw,
 * Idempotency-Keys per company and token (a replay answers the stored body, another request hash
 * is IdempotencyConflict), and the outbox (`events`: what committed transactions published).
 * `makeTx` builds the service's `Tx` over a `FakeScope`; a store's own reads (lists) go in a
 * subclass.
 */
export class FakeTenantStore<Tx, Row extends { id: string }> implements TenantStore<Tx, Row> {
  /** Committed rows, by company then id. */
  readonly rows = new Map<number, Map<string, Row>>()
  /** Events of committed transactions, in order. */
  readonly events: CloudEvent[] = []
  /** Stored first answers, by `company/token/key`. */
  readonly keys = new Map<string, { hash: string; body: unknown }>()
  /** How many transactions ran (committed or not). */
  transactions = 0

  constructor(private readonly makeTx: (scope: FakeScope<Row>) => Tx) {}

  /** Seeds a committed row of a company. */
  seed(companyId: number, row: Row): Row {
    this.companyRows(companyId).set(row.id, copy(row))
    return row
  }

  async transaction<T>(companyId: number, fn: (tx: Tx) => Promise<T>): Promise<T> {
    this.transactions++
    const staged = new Map(this.companyRows(companyId))
    const outbox: CloudEvent[] = []
    const scope: FakeScope<Row> = {
      companyId,
      get: (id) => (staged.has(id) ? copy(staged.get(id)!) : null),
      all: () => [...staged.values()].map(copy),
      put: (row) => (staged.set(row.id, copy(row)), copy(row)),
      publish: (events) => void outbox.push(...copy(events)),
    }
    const result = await fn(this.makeTx(scope))
    this.rows.set(companyId, staged)
    this.events.push(...outbox)
    return result
  }

  async idempotent<B>(
    companyId: number,
    idempotency: IdempotencyKey,
    fn: (tx: Tx) => Promise<StoredResponse<B>>,
  ): Promise<StoredResponse<B>> {
    if (idempotency.key === undefined) return this.transaction(companyId, fn)
    if (!KEY.test(idempotency.key))
      throw new ValidationFailed([{ path: 'Idempotency-Key', message: 'must be 1-255 printable characters' }])
    const stored = await this.storedResponse<B>(companyId, idempotency)
    if (stored) return stored
    const result = await this.transaction(companyId, fn)
    this.keys.set(this.keyOf(companyId, idempotency), { hash: idempotency.hash, body: copy(result.body) })
    return result
  }

  async storedResponse<B>(companyId: number, idempotency: IdempotencyKey): Promise<StoredResponse<B> | null> {
    if (idempotency.key === undefined) return null
    const prior = this.keys.get(this.keyOf(companyId, idempotency))
    if (!prior) return null
    if (prior.hash !== idempotency.hash) throw new IdempotencyConflict()
    return { body: copy(prior.body) as B, replayed: true }
  }

  async findById(companyId: number, id: string): Promise<Row | null> {
    const row = this.rows.get(companyId)?.get(id)
    return row ? copy(row) : null
  }

  private companyRows(companyId: number): Map<string, Row> {
    let rows = this.rows.get(companyId)
    if (!rows) this.rows.set(companyId, (rows = new Map()))
    return rows
  }

  private keyOf(companyId: number, k: IdempotencyKey): string {
    return JSON.stringify([companyId, k.tokenId, k.key])
  }
}

/** A use case's `Ctx` for a unit test: the principal, a silent logger, a request id. */
export function testCtx(auth: Principal, requestId = 'req-test-1'): Ctx {
  return { auth, log: pino({ level: 'silent' }), requestId }
}
