import type { Knex } from 'knex'
import { companyIdempotent, storedIdempotentResponse } from '../idempotency'
import type { IdempotencyKey, StoredResponse, TenantStore } from '../tenant-store'
import { companyOf, companyPage, companyRowById, companyTransaction } from './company'

/** The table a repository owns: its name, the columns the API shows, and a row as the API shows it. */
export interface TenantTable<Row> {
  name: string
  columns: readonly string[]
  toRow(row: Record<string, unknown>): Row
}

/**
 * The shell every tenant repository shares (a service's repository extends it and adds `tx`, what
 * a use case may do in one company's transaction, and its lists). Every transaction sets
 * `app.idempresa` for the row-level security policies (companyTransaction); `findById` and
 * `page` are one round trip each (companyRowById, companyPage); `rowById` reads inside one.
 */
export abstract class TenantRepository<Tx, Row> implements TenantStore<Tx, Row> {
  protected constructor(
    protected readonly knex: Knex,
    protected readonly table: TenantTable<Row>,
  ) {}

  /** What a use case may do inside the company's transaction `trx`. */
  protected abstract tx(companyId: number, trx: Knex.Transaction): Tx

  transaction<T>(companyId: number, fn: (tx: Tx) => Promise<T>): Promise<T> {
    return companyTransaction(this.knex, companyId, (trx) => fn(this.tx(companyId, trx)))
  }

  idempotent<B>(
    companyId: number,
    idempotency: IdempotencyKey,
    fn: (tx: Tx) => Promise<StoredResponse<B>>,
  ): Promise<StoredResponse<B>> {
    return companyIdempotent(this.knex, companyId, idempotency, (trx) => fn(this.tx(companyId, trx)))
  }

  storedResponse<B>(companyId: number, idempotency: IdempotencyKey): Promise<StoredResponse<B> | null> {
    return storedIdempotentResponse(this.knex, companyId, idempotency)
  }

  /** One round trip (companyRowById): the most frequent call of the API. */
  async findById(companyId: number, id: string): Promise<Row | null> {
    const t = this.table
    const row = await companyRowById<Record<string, unknown>>(this.knex, companyId, t.name, id, t.columns)
    return row ? t.toRow(row) : null
  }

  /**
   * Row `id` of the transaction's company (the one `trx` was opened for: companyOf), as the API
   * shows it, or null; with `forUpdate` locked until `trx` ends. What a `Tx`'s findById runs.
   */
  protected async rowById(
    trx: Knex.Transaction,
    id: string,
    opts?: { forUpdate?: boolean },
  ): Promise<Row | null> {
    const t = this.table
    const q = trx(t.name)
      .where({ idempresa: companyOf(trx), id })
      .first([...t.columns])
    const row = (await (opts?.forUpdate ? q.forUpdate() : q)) as Record<string, unknown> | undefined
    return row ? t.toRow(row) : null
  }

  /** One page and its exact total in one statement (companyPage), as the API shows the rows. */
  protected async page(
    companyId: number,
    q: { page: Knex.QueryBuilder; total: Knex.QueryBuilder; orderBy: string },
  ): Promise<{ rows: Row[]; total: number }> {
    const { rows, total } = await companyPage<Record<string, unknown> & { id: unknown }>(
      this.knex,
      companyId,
      q,
    )
    return { rows: rows.map((r) => this.table.toRow(r)), total }
  }
}
