import type { Knex } from 'knex'
import {
  StatementNames,
  companyPage,
  companyRead,
  companyRowById,
  companyTransaction,
  runPrepared,
  uuidv7,
} from '@clinic/platform'
import { rlsThings } from './helpers'

/**
 * The hot reads (companyRowById, companyPage, companyRead) run as named prepared statements: the
 * connection lists them in pg_prepared_statements, one per text, reused by later calls. On a pool
 * of one connection every statement of a test meets what the ones before left on it.
 */
const A = 201
const B = 202
let fixture: Awaited<ReturnType<typeof rlsThings>>
let db: Knex
let ids: Record<number, string[]>

beforeAll(async () => {
  fixture = await rlsThings({ [A]: 3, [B]: 2 }, { grants: ['SELECT', 'INSERT'] })
  ;({ db, ids } = fixture)
})

afterAll(() => fixture?.close())

type Prepared = { name: string; statement: string; generic_plans: number; custom_plans: number }
/** The statements prepared on the one connection (the query itself runs unnamed: not listed). */
const prepared = async () =>
  (
    await db.raw<{ rows: Prepared[] }>(
      `SELECT name, statement, generic_plans, custom_plans FROM pg_prepared_statements ORDER BY name`,
    )
  ).rows
const newSince = (before: Prepared[], after: Prepared[]) =>
  after.filter((p) => !before.some((b) => b.name === p.name))
const runs = (p: Prepared | undefined) => (p ? p.generic_plans + p.custom_plans : 0)
const NAME = /^p[0-9a-f]{24}$/

const page = (company: number, name?: string) => {
  const matching = db('things').where('idempresa', company)
  if (name !== undefined) matching.where('name', name)
  return companyPage<{ id: string; at: number }>(db, company, {
    page: matching.clone().select('id', 'at').orderBy('at', 'desc').limit(10),
    total: matching.clone().count({ n: '*' }),
    orderBy: 'p.at DESC',
  })
}

describe('companyRowById', () => {
  const columns = ['id', 'name'] as const

  it('prepares the read once on the connection, and the next call reuses it', async () => {
    const before = await prepared()
    await expect(companyRowById(db, A, 'things', ids[A]![0]!, columns)).resolves.toEqual({
      id: ids[A]![0],
      name: `thing ${A} 1`,
    })
    const once = await prepared()
    const added = newSince(before, once)
    expect(added).toEqual([expect.objectContaining({ name: expect.stringMatching(NAME) })])
    expect(added[0]!.statement).toMatch(/set_config\('app.idempresa', \$1, true\).*from "things"/s)

    await expect(companyRowById(db, B, 'things', ids[B]![1]!, columns)).resolves.toMatchObject({
      name: `thing ${B} 2`,
    })
    const twice = await prepared()
    expect(twice.map((p) => p.name)).toEqual(once.map((p) => p.name))
    expect(runs(twice.find((p) => p.name === added[0]!.name))).toBe(2)
  })

  it("hands the driver's error to the caller, and the statement stays prepared", async () => {
    const cols = ['id', 'at'] as const
    const before = await prepared()
    // Parsed, then refused at bind: PostgreSQL keeps the statement, node-postgres knows it.
    await expect(companyRowById(db, A, 'things', 'not-a-uuid', cols)).rejects.toMatchObject({
      code: '22P02',
    })
    const added = newSince(before, await prepared())
    expect(added).toHaveLength(1)
    // The connection went back to the pool of one, and the next call runs the same statement.
    await expect(companyRowById(db, A, 'things', ids[A]![2]!, cols)).resolves.toEqual({
      id: ids[A]![2],
      at: 3,
    })
    expect(newSince(before, await prepared()).map((p) => p.name)).toEqual([added[0]!.name])
  })
})

describe('companyPage and companyRead', () => {
  it('prepare one statement per text: another filter is another name, other values are not', async () => {
    const before = await prepared()
    await expect(page(A)).resolves.toMatchObject({ total: 3 })
    await expect(page(A, `thing ${A} 2`)).resolves.toMatchObject({ rows: [{ at: 2 }], total: 1 })
    await expect(page(B, `thing ${B} 1`)).resolves.toMatchObject({ rows: [{ at: 1 }], total: 1 })
    const added = newSince(before, await prepared())
    expect(added).toHaveLength(2)
    expect(added.map((p) => runs(p)).sort()).toEqual([1, 2])

    const read = () => companyRead(db, A, db('things').where('at', 1).select('name'))
    await expect(read()).resolves.toEqual([{ name: `thing ${A} 1` }])
    await expect(read()).resolves.toEqual([{ name: `thing ${A} 1` }])
    const next = newSince(before, await prepared())
    expect(next).toHaveLength(3)
    expect(runs(next.find((p) => p.statement.includes('"at" = $2')))).toBe(2)
  })
})

describe('row-level security', () => {
  // No company filter: only the policy keeps the other company out.
  const everything = (company: number) =>
    companyRead<{ idempresa: number }>(db, company, db('things').select('idempresa').orderBy('at'))
  const companies = async (company: number) => [
    ...new Set((await everything(company)).map((r) => r.idempresa)),
  ]
  const statement = (list: Prepared[]) =>
    list.find((p) => /select "idempresa" from "things"/.test(p.statement))

  afterEach(() => db.raw('RESET plan_cache_mode'))

  it.each(['auto', 'force_generic_plan'])(
    'holds on one connection reading A, B, A… (plan_cache_mode %s)',
    async (mode) => {
      await db.raw(`SET plan_cache_mode = ${mode}`)
      const before = statement(await prepared())
      // More than five runs: past them PostgreSQL may keep a generic plan of the statement.
      for (let i = 0; i < 4; i++) {
        expect(await companies(A)).toEqual([A])
        expect(await companies(B)).toEqual([B])
        await expect(companyRowById(db, A, 'things', ids[B]![0]!, ['id'])).resolves.toBeNull()
        await expect(page(A)).resolves.toMatchObject({ total: 3 })
        await expect(page(B)).resolves.toMatchObject({ total: 2 })
      }
      const after = statement(await prepared())
      expect(runs(after) - runs(before)).toBe(8)
      if (mode === 'force_generic_plan') expect(after!.generic_plans - (before?.generic_plans ?? 0)).toBe(8)
    },
  )
})

describe('in a transaction', () => {
  it("runs prepared on the transaction's connection and sees its uncommitted row", async () => {
    const id = uuidv7()
    const before = await prepared()
    // The pool has one connection, held by the transaction: the reads must run on it, inside the
    // transaction, to see the row at all.
    const seen = await companyTransaction(db, A, async (trx) => {
      await trx('things').insert({ idempresa: A, id, name: 'uncommitted', at: 9 })
      return [
        await companyRowById(trx, A, 'things', id, ['id', 'name']),
        await companyRead(trx, A, trx('things').where('id', id).select('at')),
        await companyPage(trx, A, {
          page: trx('things').where('at', 9).select('id'),
          total: trx('things').where('at', 9).count({ n: '*' }),
          orderBy: 'p.id',
        }),
      ]
    })
    expect(seen).toEqual([
      { id, name: 'uncommitted' },
      [{ at: 9 }],
      { rows: [{ id, page_total: 1 }], total: 1 },
    ])
    // Each of the three reads ran as a prepared statement on the transaction's connection (the
    // pool's one): their executions are counted there.
    const total = (list: Prepared[]) => list.reduce((n, p) => n + runs(p), 0)
    const after = await prepared()
    expect(total(after) - total(before)).toBe(3)
    expect(after.every((p) => NAME.test(p.name))).toBe(true)
  })
})

describe('runPrepared', () => {
  const statement = (alias: string) => db.raw(`SELECT ?::int AS ${alias}`, [7]).toSQL()

  it('past its bound of texts runs a new text unnamed, and still names the texts it took', async () => {
    const names = new StatementNames(1)
    const first = statement('capped_first')
    const second = statement('capped_second')
    const before = await prepared()
    await expect(runPrepared(db, first.sql, first.bindings, names)).resolves.toEqual([{ capped_first: 7 }])
    await expect(runPrepared(db, second.sql, second.bindings, names)).resolves.toEqual([{ capped_second: 7 }])
    await expect(runPrepared(db, first.sql, first.bindings, names)).resolves.toEqual([{ capped_first: 7 }])
    const added = newSince(before, await prepared())
    expect(added).toEqual([expect.objectContaining({ statement: 'SELECT $1::int AS capped_first' })])
    expect(runs(added[0])).toBe(2)
  })

  it("reports each statement once on knex's 'query' event, with its text and name", async () => {
    const seen: Array<{ sql: string; bindings: unknown[]; options?: { name?: string } }> = []
    const listen = (q: (typeof seen)[number]) => seen.push(q)
    db.on('query', listen)
    try {
      await companyRowById(db, A, 'things', ids[A]![0]!, ['id'])
      await page(A)
      await companyRead(db, B, db('things').select('id'))
    } finally {
      db.off('query', listen)
    }
    expect(seen).toHaveLength(3)
    for (const q of seen) {
      expect(q.sql).toMatch(/^SELECT .*set_config\('app.idempresa', \$1, true\)/s)
      expect(q.options?.name).toMatch(NAME)
    }
    expect(seen[0]!.bindings).toEqual([String(A), A, ids[A]![0], 1])
  })
})
