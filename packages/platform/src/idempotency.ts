import { createHash } from 'node:crypto'
import type { Knex } from 'knex'
import { canonicalJson } from './canonical-json'
import { companyRead, companyTransaction } from './db/company'
import { IdempotencyConflict, ValidationFailed } from './errors'
import type { IdempotencyKey, StoredResponse } from './tenant-store'

export type { IdempotencyKey, StoredResponse } from './tenant-store'

const KEY = /^[\x21-\x7e]{1,255}$/
const WINDOW_HOURS = 24

export function requestHash(method: string, path: string, body: unknown): string {
  return createHash('sha256')
    .update(`${method} ${path}\n${canonicalJson(body)}`)
    .digest('hex')
}

/**
 * Runs `create` once per (company, token, Idempotency-Key) within 24 h. The key row is inserted in
 * the same transaction as the change, so a concurrent duplicate waits on it and then replays; a
 * failed attempt leaves no key behind and may be retried. Keys are scoped to the token (DESIGN.md
 * section 3): another user of the company, or another token of the same user, never gets a stored
 * answer. The caller re-checks that a replayed resource is still visible to the caller.
 */
export async function withIdempotency<B>(
  knex: Knex,
  key: IdempotencyKey & { companyId: number },
  create: (trx: Knex.Transaction) => Promise<StoredResponse<B>>,
): Promise<StoredResponse<B>> {
  // In the caller's transaction when there is one (no SAVEPOINT: a failure rolls it all back).
  const inTransaction = <T>(fn: (trx: Knex.Transaction) => Promise<T>): Promise<T> =>
    knex.isTransaction ? fn(knex as Knex.Transaction) : knex.transaction(fn)
  if (key.key === undefined) return inTransaction(create)
  if (!KEY.test(key.key))
    throw new ValidationFailed([{ path: 'Idempotency-Key', message: 'must be 1-255 printable characters' }])
  const where = { idempresa: key.companyId, token_id: key.tokenId, key: key.key }
  return inTransaction(async (trx) => {
    await trx('idempotency_keys')
      .where(where)
      .where('created_at', '<', trx.raw(`now() - interval '${WINDOW_HOURS} hours'`))
      .delete()
    const inserted = await trx('idempotency_keys')
      .insert({ ...where, request_hash: key.hash })
      .onConflict(['idempresa', 'token_id', 'key'])
      .ignore()
      .returning('key')
    if (!inserted.length) {
      const prior = await trx('idempotency_keys').where(where).first()
      if (!prior || prior.request_hash !== key.hash) throw new IdempotencyConflict()
      return { body: prior.body as B, replayed: true }
    }
    const result = await create(trx)
    await trx('idempotency_keys')
      .where(where)
      .update({ body: JSON.stringify(result.body) })
    return result
  })
}

/**
 * The stored answer of an Idempotency-Key this token used within the window, read before anything
 * else so that a retry replays without the lookups a first request needs (another service may be
 * down, or the data changed since); another body under the key is `409 idempotency_conflict`.
 * Null for a new (or spent) key: the caller goes the first request's way, `companyIdempotent`.
 */
export async function storedIdempotentResponse<B>(
  knex: Knex,
  companyId: number,
  key: IdempotencyKey,
): Promise<StoredResponse<B> | null> {
  if (key.key === undefined || !KEY.test(key.key)) return null // a bad key is refused on the way in
  // One round trip (companyRead).
  const [prior] = await companyRead<{ request_hash: string; body: B | null }>(
    knex,
    companyId,
    knex('idempotency_keys')
      .where({ idempresa: companyId, token_id: key.tokenId, key: key.key })
      .where('created_at', '>=', knex.raw(`now() - interval '${WINDOW_HOURS} hours'`))
      .select('request_hash', 'body')
      .limit(1),
  )
  if (!prior || prior.body === null) return null
  if (prior.request_hash !== key.hash) throw new IdempotencyConflict()
  return { body: prior.body, replayed: true }
}

/**
 * `withIdempotency` inside a `companyTransaction`: the create and its key row are written for one
 * company under row-level security, in that one transaction.
 */
export function companyIdempotent<B>(
  knex: Knex,
  companyId: number,
  idempotency: IdempotencyKey,
  create: (trx: Knex.Transaction) => Promise<StoredResponse<B>>,
): Promise<StoredResponse<B>> {
  return companyTransaction(knex, companyId, (trx) =>
    withIdempotency(trx, { companyId, ...idempotency }, create),
  )
}
