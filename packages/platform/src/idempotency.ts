import { createHash } from 'node:crypto'
import type { Knex } from 'knex'
import { IdempotencyConflict, ValidationFailed } from './errors'

export interface StoredResponse<B = unknown> {
  status: number
  body: B
  location?: string
  /** True when this is the stored answer of an earlier request with the same key. */
  replayed?: boolean
}

const KEY = /^[\x21-\x7e]{1,255}$/
const WINDOW_HOURS = 24

export function requestHash(method: string, path: string, body: unknown): string {
  return createHash('sha256')
    .update(`${method} ${path}\n${canonicalJson(body)}`)
    .digest('hex')
}

/** JSON with sorted keys, so equal bodies hash equally whatever their key order. */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null'
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`
  const obj = value as Record<string, unknown>
  return `{${Object.keys(obj)
    .filter((k) => obj[k] !== undefined)
    .sort()
    .map((k) => `${JSON.stringify(k)}:${canonicalJson(obj[k])}`)
    .join(',')}}`
}

/**
 * Runs `create` once per (company, Idempotency-Key) within 24 h. The key row is inserted in the
 * same transaction as the change, so a concurrent duplicate waits on it and then replays; a failed
 * attempt leaves no key behind and may be retried.
 */
export async function withIdempotency<B>(
  knex: Knex,
  key: { companyId: number; key: string | undefined; hash: string },
  create: (trx: Knex.Transaction) => Promise<StoredResponse<B>>,
): Promise<StoredResponse<B>> {
  if (key.key === undefined) return knex.transaction(create)
  if (!KEY.test(key.key))
    throw new ValidationFailed([{ path: 'Idempotency-Key', message: 'must be 1-255 printable characters' }])
  return knex.transaction(async (trx) => {
    await trx('idempotency_keys')
      .where({ idempresa: key.companyId, key: key.key })
      .where('created_at', '<', trx.raw(`now() - interval '${WINDOW_HOURS} hours'`))
      .delete()
    const inserted = await trx('idempotency_keys')
      .insert({ idempresa: key.companyId, key: key.key, request_hash: key.hash })
      .onConflict(['idempresa', 'key'])
      .ignore()
      .returning('key')
    if (!inserted.length) {
      const prior = await trx('idempotency_keys').where({ idempresa: key.companyId, key: key.key }).first()
      if (!prior || prior.request_hash !== key.hash) throw new IdempotencyConflict()
      return {
        status: prior.status,
        body: prior.body as B,
        location: prior.location ?? undefined,
        replayed: true,
      }
    }
    const result = await create(trx)
    await trx('idempotency_keys')
      .where({ idempresa: key.companyId, key: key.key })
      .update({ status: result.status, body: JSON.stringify(result.body), location: result.location ?? null })
    return result
  })
}
