import { companyRead } from '@clinic/platform'
import type { Knex } from 'knex'
import { ExamsRepository } from '../../src/db/repositories/exams-repository'
import { FINDINGS, companyOf, startApp, type Company, type Harness } from '../helpers'

let h: Harness
beforeAll(async () => {
  h = await startApp()
})
afterAll(() => h.close())

type Json = Record<string, any> // eslint-disable-line @typescript-eslint/no-explicit-any
const TABLES = ['exams', 'findings', 'exam_history', 'prescriptions', 'idempotency_keys'] as const

/** A company with a signed, amended exam, a prescription and an Idempotency-Key: a row in every table. */
async function recordOf(c: Company) {
  const exam = await c.exam()
  const send = async (method: 'POST', url: string, body?: unknown, headers?: Record<string, string>) => {
    const res = await c.send(method, url, body, headers)
    if (res.statusCode >= 300) throw new Error(`${url}: ${res.statusCode} ${res.body}`)
    return res.json() as Json
  }
  const iop = await send('POST', `/clinical/exams/${exam.id}/iop`, FINDINGS.iop, { 'idempotency-key': 'rls' })
  await send('POST', `/clinical/exams/${exam.id}/sign`)
  await send('POST', `/clinical/exams/${exam.id}/amendments`, {
    reason: 'motivo ficticio',
    add: { iop: [{ ...FINDINGS.iop, mmhg: 15.5 }] },
    remove: [iop.id],
  })
  const p = await send('POST', `/clinical/exams/${exam.id}/prescriptions`, {
    type: 'spectacles',
    lenses: [{ eye: 'right', sphere: -1 }],
  })
  return { exam, iop, prescription: p }
}

/** `fn` in a transaction of the service role with `app.idempresa` set to `company` (or not set). */
const asCompany = <T>(company: number | undefined, fn: (trx: Knex.Transaction) => Promise<T>) =>
  h.knex.transaction(async (trx) => {
    if (company !== undefined) await trx.raw(`select set_config('app.idempresa', ?, true)`, [String(company)])
    return fn(trx)
  })

/** The second wall: the service role sees a company only inside a transaction that names it. */
describe('row-level security', () => {
  test('without app.idempresa the service role sees no row of any clinical table', async () => {
    const c = companyOf(h)
    await recordOf(c)
    for (const table of TABLES) {
      expect([table, (await h.owner(table).where({ idempresa: c.principal.companyId })).length > 0]).toEqual([
        table,
        true,
      ])
      expect([table, await h.knex(table).select('idempresa')]).toEqual([table, []])
    }
  })

  test('with a company set, a query without a company filter sees only that company, in every table', async () => {
    const a = companyOf(h)
    const b = companyOf(h)
    await recordOf(a)
    await recordOf(b)
    for (const table of TABLES) {
      const seen = await asCompany(b.principal.companyId, (trx) => trx(table).distinct('idempresa'))
      expect([table, seen]).toEqual([table, [{ idempresa: b.principal.companyId }]])
    }
  })

  test('a one-statement read (companyRead) sees only the company it names', async () => {
    const a = companyOf(h)
    const b = companyOf(h)
    const { exam } = await recordOf(a)
    const named = h
      .knex('findings')
      .where({ idempresa: a.principal.companyId, exam_id: exam.id })
      .select('id')
    expect(await companyRead(h.knex, b.principal.companyId, named)).toEqual([])
    expect(await companyRead(h.knex, a.principal.companyId, named.clone())).toHaveLength(2)
  })

  test('the service role cannot write a row of another company, nor change one', async () => {
    const a = companyOf(h)
    const b = companyOf(h)
    const { exam } = await recordOf(a)
    const insert = asCompany(b.principal.companyId, (trx) =>
      trx('exam_history').insert({
        idempresa: a.principal.companyId,
        exam_id: exam.id,
        version: 99,
        action: 'updated',
        user_id: 'x',
        username: 'x',
      }),
    )
    await expect(insert).rejects.toThrow(/row-level security/)
    const updated = await asCompany(b.principal.companyId, (trx) =>
      trx('findings').where({ exam_id: exam.id }).update({ state: 'superseded', superseded_in: 99 }),
    )
    expect(updated).toBe(0)
    const deleted = await asCompany(b.principal.companyId, (trx) =>
      trx('findings').where({ exam_id: exam.id }).delete(),
    )
    expect(deleted).toBe(0)
    expect(await h.owner('findings').where({ exam_id: exam.id, state: 'live' })).toHaveLength(1)
  })

  test('even for its own company, it never rewrites history or a prescription, nor deletes an exam', async () => {
    const c = companyOf(h)
    const { exam, prescription } = await recordOf(c)
    const own = <T>(fn: (trx: Knex.Transaction) => Promise<T>) => asCompany(c.principal.companyId, fn)
    const denied = /permission denied/
    await expect(
      own((trx) => trx('exam_history').where({ exam_id: exam.id }).update({ reason: 'x' })),
    ).rejects.toThrow(denied)
    await expect(own((trx) => trx('exam_history').where({ exam_id: exam.id }).delete())).rejects.toThrow(
      denied,
    )
    await expect(
      own((trx) => trx('prescriptions').where({ id: prescription.id }).update({ notes: 'x' })),
    ).rejects.toThrow(denied)
    await expect(own((trx) => trx('prescriptions').where({ id: prescription.id }).delete())).rejects.toThrow(
      denied,
    )
    await expect(own((trx) => trx('exams').where({ id: exam.id }).delete())).rejects.toThrow(denied)
    expect(await h.owner('exam_history').where({ exam_id: exam.id })).toHaveLength(4)
  })

  test('the setting is transaction-local: it does not leak to the next user of the connection', async () => {
    const c = companyOf(h)
    await recordOf(c)
    await asCompany(c.principal.companyId, async () => undefined)
    const seen = await Promise.all(Array.from({ length: 4 }, () => h.knex('exams').count({ n: '*' })))
    expect(seen.map(([r]) => Number(r!.n))).toEqual([0, 0, 0, 0])
  })
})

/** The first wall, checked without the second: the repository on the owner connection (no RLS). */
describe('repository company scoping', () => {
  test('every read and write filters by the company it is given', async () => {
    const a = companyOf(h)
    const b = companyOf(h)
    const { exam, prescription } = await recordOf(a)
    await recordOf(b)
    const repo = new ExamsRepository(h.owner)
    const other = b.principal.companyId
    expect(await repo.findById(other, exam.id)).toBeNull()
    expect((await repo.findById(a.principal.companyId, exam.id))?.id).toBe(exam.id)
    const listed = await repo.list(other, { centers: null, offset: 0, limit: 100 })
    expect(listed.rows.map((r) => r.id)).not.toContain(exam.id)
    expect(listed.total).toBe(1)
    expect(
      await repo.list(other, { centers: null, patientId: exam.patient_id, offset: 0, limit: 100 }),
    ).toEqual({
      rows: [],
      total: 0,
    })
    expect(await repo.contents(other, [exam.id])).toEqual({ findings: [], prescriptions: [] })
    expect(await repo.history(other, exam.id)).toEqual([])
    expect(await repo.prescription(other, prescription.id)).toBeNull()
    const trend = { patientId: exam.patient_id, type: 'iop', eyes: null, centers: null, limit: 10 } as const
    expect(await repo.trend(other, trend)).toEqual({ rows: [], total: 0 })
    expect((await repo.trend(a.principal.companyId, trend)).total).toBe(1)
    expect(await repo.transaction(other, (tx) => tx.findById(exam.id, { forUpdate: true }))).toBeNull()
    expect(await repo.transaction(other, (tx) => tx.findings(exam.id))).toEqual([])
    await expect(repo.transaction(other, (tx) => tx.update(exam.id, { notes: 'x' }))).rejects.toThrow(
      'No such exam',
    )
    const live: string[] = await h.owner('findings').where({ exam_id: exam.id, state: 'live' }).pluck('id')
    expect(live).toHaveLength(1)
    expect(await repo.transaction(other, (tx) => tx.supersede(exam.id, live, 9))).toEqual([])
    expect(await repo.transaction(other, (tx) => tx.deleteFinding(exam.id, 'iop', live[0]!))).toBe(false)
    expect(await h.owner('findings').where({ exam_id: exam.id, state: 'live' }).pluck('id')).toEqual(live)
    expect((await repo.findById(a.principal.companyId, exam.id))?.notes).toBeNull()
  })
})
