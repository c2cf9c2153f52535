import { companyRead } from '@clinic/platform'
import { PatientsRepository } from '../../src/db/repositories/patients-repository'
import { createPatient, newCompany, startApp, type Harness } from '../helpers'

let h: Harness
beforeAll(async () => {
  h = await startApp()
})
afterAll(() => h.close())

/** The second wall: the service role sees a company only inside a transaction that names it. */
describe('row-level security', () => {
  test('without app.idempresa the service role sees no patient, counter or idempotency key', async () => {
    const c = newCompany(h.app)
    await createPatient(c)
    await c.post(
      '/patients',
      { first_name: 'K', last_name: 'K', birth_date: '1990-01-01' },
      { 'idempotency-key': 'rls' },
    )
    expect(await h.owner('patients').where({ idempresa: c.principal.companyId })).toHaveLength(2)
    expect(await h.knex('patients').where({ idempresa: c.principal.companyId })).toHaveLength(0)
    expect(await h.knex('patients')).toHaveLength(0)
    expect(await h.knex('patient_counts')).toHaveLength(0)
    expect(await h.knex('idempotency_keys')).toHaveLength(0)
  })

  test('the name search function (which bypasses RLS to use its index) also answers only the set company', async () => {
    const a = newCompany(h.app)
    const b = newCompany(h.app)
    await createPatient(a, { last_name: 'Buscable' })
    const search = (company?: number) =>
      h.knex.transaction(async (trx) => {
        if (company) await trx.raw(`select set_config('app.idempresa', ?, true)`, [String(company)])
        return (await trx.raw(`select idempresa from search_patients('%Buscable%', 'x')`)).rows
      })
    expect(await search()).toEqual([])
    expect(await search(b.principal.companyId)).toEqual([])
    expect(await search(a.principal.companyId)).toEqual([{ idempresa: a.principal.companyId }])
  })

  test('with another company set, a query without a company filter sees only that company', async () => {
    const a = newCompany(h.app)
    const b = newCompany(h.app)
    await createPatient(a)
    await createPatient(b)
    const rows = await h.knex.transaction(async (trx) => {
      await trx.raw(`select set_config('app.idempresa', ?, true)`, [String(b.principal.companyId)])
      return trx('patients').select('idempresa')
    })
    expect(rows).toEqual([{ idempresa: b.principal.companyId }])
  })

  test('a one-statement read (companyRead) sees only the company it names, and the setting ends with it', async () => {
    const a = newCompany(h.app)
    const b = newCompany(h.app)
    await createPatient(a)
    const pb = await createPatient(b)
    const read = (company: number) =>
      companyRead<{ idempresa: number }>(h.knex, company, h.knex('patients').select('idempresa'))
    expect(await read(b.principal.companyId)).toEqual([{ idempresa: b.principal.companyId }])
    expect(await read(a.principal.companyId)).not.toContainEqual({ idempresa: b.principal.companyId })
    // Even a query that names the other company finds nothing of it.
    const named = h.knex('patients').where({ idempresa: b.principal.companyId, id: pb.id }).select('id')
    expect(await companyRead(h.knex, a.principal.companyId, named)).toEqual([])
    // On every pooled connection afterwards, the setting is gone.
    const after = await Promise.all(
      Array.from({ length: 4 }, () => h.knex.raw(`select current_setting('app.idempresa', true) AS v`)),
    )
    for (const r of after) expect([null, '']).toContain(r.rows[0].v)
  })

  test('the service role cannot write a row of another company', async () => {
    const a = newCompany(h.app)
    const b = newCompany(h.app)
    const p = await createPatient(a)
    const insert = h.knex.transaction(async (trx) => {
      await trx.raw(`select set_config('app.idempresa', ?, true)`, [String(b.principal.companyId)])
      await trx('patients').insert({
        idempresa: a.principal.companyId,
        id: '01900000-0000-7000-8000-0000000000aa',
        first_name: 'X',
        last_name: 'Y',
        birth_date: '1990-01-01',
      })
    })
    await expect(insert).rejects.toThrow(/row-level security/)
    const updated = await h.knex.transaction(async (trx) => {
      await trx.raw(`select set_config('app.idempresa', ?, true)`, [String(b.principal.companyId)])
      return trx('patients').where({ id: p.id }).update({ notes: 'x' })
    })
    expect(updated).toBe(0)
  })

  test('the setting is transaction-local: it does not leak to the next user of the connection', async () => {
    const c = newCompany(h.app)
    await createPatient(c)
    await h.knex.transaction(async (trx) => {
      await trx.raw(`select set_config('app.idempresa', ?, true)`, [String(c.principal.companyId)])
    })
    // Every pooled connection, after that transaction ended.
    const seen = await Promise.all(Array.from({ length: 4 }, () => h.knex('patients').count({ n: '*' })))
    expect(seen.map(([r]) => Number(r!.n))).toEqual([0, 0, 0, 0])
  })
})

/** The first wall, checked without the second: the repository on the owner connection (no RLS). */
describe('repository company scoping', () => {
  test('every read and write filters by the company it is given', async () => {
    const a = newCompany(h.app)
    const b = newCompany(h.app)
    const p = await createPatient(a, { codalmacen: 'ALM1' })
    await createPatient(b, { codalmacen: 'ALM1' })
    const repo = new PatientsRepository(h.owner)
    expect(await repo.findById(b.principal.companyId, p.id)).toBeNull()
    expect((await repo.findById(a.principal.companyId, p.id))?.id).toBe(p.id)
    const listed = await repo.list(b.principal.companyId, {
      centers: null,
      sort: 'last_name',
      offset: 0,
      limit: 100,
    })
    expect(listed.rows.map((r) => r.id)).not.toContain(p.id)
    expect(listed.total).toBe(1)
    const searched = await repo.list(b.principal.companyId, {
      centers: ['ALM1'],
      q: p.last_name as string,
      sort: 'last_name',
      offset: 0,
      limit: 100,
    })
    expect(searched).toEqual({ rows: [], total: 0 })
    const inTx = await repo.transaction(b.principal.companyId, (tx) => tx.findById(p.id, { forUpdate: true }))
    expect(inTx).toBeNull()
    await expect(
      repo.transaction(b.principal.companyId, (tx) => tx.update(p.id, { notes: 'x' })),
    ).rejects.toThrow()
    expect((await repo.findById(a.principal.companyId, p.id))?.notes).toBeNull()
  })
})
