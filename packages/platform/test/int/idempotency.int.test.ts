import type { Knex } from 'knex'
import {
  IdempotencyConflict,
  ValidationFailed,
  requestHash,
  withIdempotency,
  type StoredResponse,
} from '@clinic/platform'
import { commonTables } from '@clinic/platform'
import { freshCompanyId, waitFor } from '@clinic/platform/testing'
import { testSchema } from './helpers'

jest.setTimeout(20_000)

let db: Awaited<ReturnType<typeof testSchema>>
let knex: Knex

beforeAll(async () => {
  db = await testSchema(12)
  knex = db.knex
})
afterAll(() => db?.drop())

type Body = { id: number; name: string }
const TOKEN = '0190c5a0-0000-7000-8000-00000000000a'
const hashOf = (body: unknown) => requestHash('POST', '/things', body)

/** A create that inserts a row (so repeats are visible) and counts its runs. */
function creator(companyId: number, name: string) {
  const runs = { n: 0 }
  const create = async (trx: Knex.Transaction): Promise<StoredResponse<Body>> => {
    runs.n++
    const [row] = await trx('things').insert({ idempresa: companyId, name }).returning(['id', 'name'])
    return { body: { id: Number(row.id), name: row.name } }
  }
  return { runs, create }
}

const things = async (companyId: number) => knex('things').where({ idempresa: companyId }).pluck('name')
const keyRow = (companyId: number, key: string) =>
  knex('idempotency_keys').where({ idempresa: companyId, token_id: TOKEN, key }).first()

describe('withIdempotency', () => {
  it('replays the stored answer for the same key and body, without running create again', async () => {
    const company = freshCompanyId()
    const body = { name: 'one', tags: { b: 1, a: 2 } }
    const { runs, create } = creator(company, 'one')
    const first = await withIdempotency(
      knex,
      { companyId: company, tokenId: TOKEN, key: 'key-1', hash: hashOf(body) },
      create,
    )
    expect(first.replayed).toBeUndefined()
    expect(first.body).toMatchObject({ name: 'one' })
    // Same body with its keys in another order: same hash, same answer.
    const again = await withIdempotency(
      knex,
      {
        companyId: company,
        tokenId: TOKEN,
        key: 'key-1',
        hash: hashOf({ tags: { a: 2, b: 1 }, name: 'one' }),
      },
      create,
    )
    expect(again).toEqual({ ...first, replayed: true })
    expect(runs.n).toBe(1)
    expect(await things(company)).toEqual(['one'])
    expect(await keyRow(company, 'key-1')).toMatchObject({ body: first.body })
  })

  it('refuses the same key with another body with idempotency_conflict', async () => {
    const company = freshCompanyId()
    const { runs, create } = creator(company, 'x')
    await withIdempotency(
      knex,
      { companyId: company, tokenId: TOKEN, key: 'k', hash: hashOf({ name: 'x' }) },
      create,
    )
    const other = withIdempotency(
      knex,
      { companyId: company, tokenId: TOKEN, key: 'k', hash: hashOf({ name: 'y' }) },
      create,
    )
    await expect(other).rejects.toBeInstanceOf(IdempotencyConflict)
    await expect(other).rejects.toMatchObject({ status: 409, code: 'idempotency_conflict' })
    expect(runs.n).toBe(1)
    expect(await things(company)).toEqual(['x'])
  })

  it('scopes keys by company', async () => {
    const [c1, c2] = [freshCompanyId(), freshCompanyId()]
    const a = creator(c1, 'a')
    const b = creator(c2, 'b')
    await withIdempotency(
      knex,
      { companyId: c1, tokenId: TOKEN, key: 'shared', hash: hashOf({ n: 1 }) },
      a.create,
    )
    const r = await withIdempotency(
      knex,
      { companyId: c2, tokenId: TOKEN, key: 'shared', hash: hashOf({ n: 2 }) },
      b.create,
    )
    expect(r.replayed).toBeUndefined()
    expect(b.runs.n).toBe(1)
    expect(await things(c2)).toEqual(['b'])
  })

  it('scopes keys by token: another token of the company with the same key and body runs create', async () => {
    const company = freshCompanyId()
    const body = { n: 1 }
    const a = creator(company, 'a')
    const b = creator(company, 'b')
    await withIdempotency(
      knex,
      { companyId: company, tokenId: TOKEN, key: 'k', hash: hashOf(body) },
      a.create,
    )
    const other = '0190c5a0-0000-7000-8000-00000000000b'
    const r = await withIdempotency(
      knex,
      { companyId: company, tokenId: other, key: 'k', hash: hashOf(body) },
      b.create,
    )
    expect(r.replayed).toBeUndefined()
    expect(r.body.name).toBe('b')
    expect((await things(company)).sort()).toEqual(['a', 'b'])
  })

  it('leaves no key behind when create fails, so a retry runs', async () => {
    const company = freshCompanyId()
    const hash = hashOf({ name: 'retry' })
    await expect(
      withIdempotency(knex, { companyId: company, tokenId: TOKEN, key: 'fails-once', hash }, async (trx) => {
        await trx('things').insert({ idempresa: company, name: 'half done' })
        throw new Error('create failed')
      }),
    ).rejects.toThrow('create failed')
    expect(await keyRow(company, 'fails-once')).toBeUndefined()
    expect(await things(company)).toEqual([])
    const { runs, create } = creator(company, 'retry')
    const r = await withIdempotency(
      knex,
      { companyId: company, tokenId: TOKEN, key: 'fails-once', hash },
      create,
    )
    expect(r.replayed).toBeUndefined()
    expect(runs.n).toBe(1)
    expect(await things(company)).toEqual(['retry'])
  })

  it('runs create once for concurrent calls with the same key; the others wait and replay', async () => {
    const company = freshCompanyId()
    const hash = hashOf({ name: 'concurrent' })
    const others = 4
    let runs = 0
    const blockedOnKey = async () =>
      Number(
        (
          await knex.raw(
            `SELECT count(*) AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND application_name = ? AND query ILIKE 'insert into "idempotency_keys"%'`,
            [db.schema],
          )
        ).rows[0].n,
      )
    const create = async (trx: Knex.Transaction): Promise<StoredResponse<Body>> => {
      runs++
      const [row] = await trx('things')
        .insert({ idempresa: company, name: 'concurrent' })
        .returning(['id', 'name'])
      // Hold the transaction open until every other call is waiting on this key.
      await waitFor(async () => (await blockedOnKey()) >= others, {
        timeoutMs: 10_000,
        what: 'the other calls to wait',
      })
      return { body: { id: Number(row.id), name: row.name } }
    }
    const results = await Promise.all(
      Array.from({ length: others + 1 }, () =>
        withIdempotency(knex, { companyId: company, tokenId: TOKEN, key: 'race', hash }, create),
      ),
    )
    expect(runs).toBe(1)
    expect(await things(company)).toEqual(['concurrent'])
    expect(results.filter((r) => r.replayed === true)).toHaveLength(others)
    const bodies = new Set(results.map((r) => JSON.stringify(r.body)))
    expect(bodies.size).toBe(1)
  })

  it('lets a key be used again after 24 hours', async () => {
    const company = freshCompanyId()
    await withIdempotency(
      knex,
      { companyId: company, tokenId: TOKEN, key: 'old', hash: hashOf({ v: 1 }) },
      creator(company, 'v1').create,
    )
    await knex('idempotency_keys')
      .where({ idempresa: company, key: 'old' })
      .update({ created_at: knex.raw(`now() - interval '25 hours'`) })
    const { runs, create } = creator(company, 'v2')
    const r = await withIdempotency(
      knex,
      { companyId: company, tokenId: TOKEN, key: 'old', hash: hashOf({ v: 2 }) },
      create,
    )
    expect(r.replayed).toBeUndefined()
    expect(runs.n).toBe(1)
    expect(await keyRow(company, 'old')).toMatchObject({ request_hash: hashOf({ v: 2 }) })
  })

  it('runs create without storing anything when no key is sent', async () => {
    const company = freshCompanyId()
    const { runs, create } = creator(company, 'no key')
    await withIdempotency(
      knex,
      { companyId: company, tokenId: TOKEN, key: undefined, hash: hashOf({}) },
      create,
    )
    await withIdempotency(
      knex,
      { companyId: company, tokenId: TOKEN, key: undefined, hash: hashOf({}) },
      create,
    )
    expect(runs.n).toBe(2)
    expect(await knex('idempotency_keys').where({ idempresa: company })).toEqual([])
  })

  it.each([
    ['empty', ''],
    ['with a space', 'a b'],
    ['too long', 'k'.repeat(256)],
    ['non-ASCII', 'clé'],
  ])('refuses a key that is %s with validation_failed', async (_what, key) => {
    const company = freshCompanyId()
    const { runs, create } = creator(company, 'bad key')
    const p = withIdempotency(knex, { companyId: company, tokenId: TOKEN, key, hash: hashOf({}) }, create)
    await expect(p).rejects.toBeInstanceOf(ValidationFailed)
    await expect(p).rejects.toMatchObject({
      errors: [{ path: 'Idempotency-Key', message: 'must be 1-255 printable characters' }],
    })
    expect(runs.n).toBe(0)
  })
})

describe('commonTables.idempotencyKeysPerToken', () => {
  it('upgrades a per-company table: old keys (no token) are dropped, the key is per token', async () => {
    await knex.transaction(async (trx) => {
      await trx.raw(`CREATE TEMP TABLE idempotency_keys (
        idempresa integer NOT NULL, key text NOT NULL, request_hash text NOT NULL, status integer,
        body jsonb, location text, created_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (idempresa, key)) ON COMMIT DROP`)
      await trx('idempotency_keys').insert({ idempresa: 1, key: 'old', request_hash: 'h' })
      await commonTables.idempotencyKeysPerToken(trx)
      expect(await trx('idempotency_keys').select()).toEqual([])
      await trx('idempotency_keys').insert([
        { idempresa: 1, token_id: 'a', key: 'k', request_hash: 'h' },
        { idempresa: 1, token_id: 'b', key: 'k', request_hash: 'h' },
      ])
      await expect(
        trx('idempotency_keys').insert({ idempresa: 1, token_id: 'a', key: 'k', request_hash: 'h' }),
      ).rejects.toThrow(/duplicate key/)
    })
  })
})
