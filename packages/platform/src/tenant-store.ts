import type { Ctx } from './context'
import { centerVisible, visibleCenters } from './centers'
import { NotFound } from './errors'
import type { CloudEvent } from './events'

/** An Idempotency-Key as a create sends it to its store: the token's key and the request's hash. */
export interface IdempotencyKey {
  /** Keys are scoped to the token (DESIGN.md section 3). */
  tokenId: string
  /** The header's value; undefined when the request sent none (the create then simply runs). */
  key: string | undefined
  /** Hash of method, path and body: the same key with another request is a conflict. */
  hash: string
}

/** A create's Idempotency-Key: the header's value and the request's hash, scoped to the caller's token. */
export const idempotencyOf = (
  ctx: Pick<Ctx, 'auth'>,
  input: { idempotencyKey: string | undefined; requestHash: string },
): IdempotencyKey => ({ tokenId: ctx.auth.tokenId, key: input.idempotencyKey, hash: input.requestHash })

/** What a create made (`body`), or what it made the first time its Idempotency-Key was used. */
export interface StoredResponse<B = unknown> {
  body: B
  /** True when this is the stored result of an earlier request with the same key. */
  replayed?: boolean
}

/**
 * What every tenant store offers its domain (the service's store interface extends it): `Tx` is
 * what a use case may do inside one company's transaction, `Row` what `findById` returns. The
 * knex implementation is `TenantRepository` (`@clinic/platform/db`); unit tests use `FakeTenantStore`
 * (`@clinic/platform/testing`).
 */
export interface TenantStore<Tx, Row> {
  /** One transaction in which every statement is limited to this company. */
  transaction<T>(companyId: number, fn: (tx: Tx) => Promise<T>): Promise<T>
  /** Like `transaction`, but runs `fn` at most once per Idempotency-Key (replays the stored answer). */
  idempotent<B>(
    companyId: number,
    idempotency: IdempotencyKey,
    fn: (tx: Tx) => Promise<StoredResponse<B>>,
  ): Promise<StoredResponse<B>>
  /**
   * The stored answer of an earlier request with this Idempotency-Key (`replayed`), or null when
   * there is none (no key, a new or expired key, or one still in flight). The same key with another
   * request is IdempotencyConflict. Writes nothing: a retry is answered before any other lookup.
   */
  storedResponse<B>(companyId: number, idempotency: IdempotencyKey): Promise<StoredResponse<B> | null>
  /** The row of this company, or null (another company's id looks missing). */
  findById(companyId: number, id: string): Promise<Row | null>
}

/** What every store's `Tx` offers: the outbox, written in the same transaction as the change. */
export interface OutboxTx {
  /** Adds events to the outbox in this transaction. */
  publish(events: CloudEvent[]): Promise<void>
}

/** A `Tx` that also reads its rows (`forUpdate`: locked until the transaction ends). */
export interface TenantTx<Row> extends OutboxTx {
  findById(id: string, opts?: { forUpdate?: boolean }): Promise<Row | null>
}

/**
 * The row `id` of the caller's company if the caller may see it: its center under `?codalmacen=`
 * (`queryCenter`) and the token's centers, else 404 `notFound` (another company's id, an unknown id
 * and a hidden center look alike). Also what a replayed create re-checks: a replay is a read.
 */
export async function findVisible<Row extends { codalmacen: string | null }>(
  ctx: Pick<Ctx, 'auth'>,
  store: Pick<TenantStore<unknown, Row>, 'findById'>,
  id: string,
  o: { queryCenter?: string; notFound: string },
): Promise<Row> {
  return visibleRow(
    visibleCenters(ctx.auth, o.queryCenter),
    await store.findById(ctx.auth.companyId, id),
    o.notFound,
  )
}

/** `row` when its center is among `visible` (visibleCenters), else 404 `notFound`. */
export function visibleRow<Row extends { codalmacen: string | null }>(
  visible: string[] | null,
  row: Row | null,
  notFound: string,
): Row {
  if (row && centerVisible(visible, row.codalmacen)) return row
  throw new NotFound(notFound)
}
