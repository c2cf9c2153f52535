import type { Knex } from 'knex'
import { TENANT_PREDICATE, companyPage, companyRead } from '@clinic/platform'
import { rlsThings } from './helpers'

/**
 * companyRead and companyPage: one statement sets `app.idempresa` and reads under row-level
 * security, as a role the policies apply to. Every part of the statement must run after the
 * setting, aggregates and functions that read the setting included (an aggregate that ran first
 * counted nothing), and the setting must end with the statement.
 */
const A = 101
const B = 102
let fixture: Awaited<ReturnType<typeof rlsThings>>
let db: Knex
let ids: Record<number, string[]>

beforeAll(async () => {
  fixture = await rlsThings(
    { [A]: 5, [B]: 2 },
    {
      extraSql: (schema, role) => `
      -- As search_patients: a function that reads the setting itself.
      CREATE FUNCTION named(pattern text) RETURNS SETOF things LANGUAGE sql STABLE SECURITY DEFINER
        SET search_path = ${schema} AS $$
          SELECT * FROM ${schema}.things
          WHERE ${TENANT_PREDICATE} AND name LIKE pattern
        $$;
      GRANT EXECUTE ON FUNCTION named(text) TO ${role}`,
    },
  )
  ;({ db, ids } = fixture)
})

afterAll(() => fixture?.close())

const page = (company: number, o: { offset?: number; limit?: number; source?: Knex.QueryBuilder } = {}) => {
  const matching = (o.source ?? db.from('things')).where('idempresa', company)
  return companyPage<{ id: string; at: number }>(db, company, {
    page: matching
      .clone()
      .select('id', 'at')
      .orderBy('at', 'desc')
      .offset(o.offset ?? 0)
      .limit(o.limit ?? 2),
    total: matching.clone().count({ n: '*' }),
    orderBy: 'p.at DESC',
  })
}
const setting = async () =>
  (await db.raw<{ rows: Array<{ s: string | null }> }>(`SELECT current_setting('app.idempresa', true) AS s`))
    .rows[0]!.s

describe('companyPage', () => {
  it('answers one page in its order and the exact total of the company', async () => {
    await expect(page(A)).resolves.toEqual({
      rows: [expect.objectContaining({ at: 5 }), expect.objectContaining({ at: 4 })],
      total: 5,
    })
    await expect(page(B, { limit: 10 })).resolves.toMatchObject({ rows: [{ at: 2 }, { at: 1 }], total: 2 })
  })

  it('counts through a function that reads the setting (the aggregate runs after it)', async () => {
    const source = db.from(db.raw('named(?) AS things', ['thing%']))
    await expect(page(A, { source })).resolves.toMatchObject({ rows: [{ at: 5 }, { at: 4 }], total: 5 })
  })

  it('answers the total with an empty page', async () => {
    await expect(page(A, { offset: 50 })).resolves.toEqual({ rows: [], total: 5 })
  })

  it('leaves no setting on the connection', async () => {
    await page(A)
    expect(await setting()).toBeFalsy()
  })
})

describe('companyRead', () => {
  const byId = (company: number, id: string) =>
    companyRead<{ id: string }>(db, company, db('things').where({ idempresa: company, id }).select('id'))

  it("reads the company's row, and nothing of another company", async () => {
    await expect(byId(A, ids[A]![0]!)).resolves.toEqual([{ id: ids[A]![0] }])
    // Even a query that forgot its company filter sees one company: row-level security.
    await expect(
      companyRead<{ id: string }>(db, A, db('things').where('id', ids[B]![0]!).select('id')),
    ).resolves.toEqual([])
    expect(await setting()).toBeFalsy()
  })
})
