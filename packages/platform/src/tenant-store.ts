/** An Idempotency-Key as a create sends it to its store: the token's key and the request's hash. */
export interface IdempotencyKey {
  /** Keys are scoped to the token (DESIGN.md section 3). */
  tokenId: string
  /** The header's value; undefined when the request sent none (the create then simply runs). */
  key: string | undefined
  /** Hash of method, path and body: the same key with another request is a conflict. */
  hash: string
}

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
