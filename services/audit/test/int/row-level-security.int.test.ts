import type { Knex } from 'knex'
import { TENANT_PREDICATE, companyTransaction, setCompany } from '@clinic/platform/db'
import { testPrincipal } from '@clinic/platform/testing'
import { appendEvents, chainReader, toRow } from '../../src/db/repositories/audit-events-repository'
import { sealEvent, toAuditDraft } from '../../src/domain/audit-event'
import { verifyCompany } from '../../src/domain/verify-company'
import { domainEvent, patientData } from '../helpers'
import { chainKey, eventsOf, migrateAudit, ownerDb, writerDb } from './setup'

/**
 * audit.events under row-level security like every other tenant table: the writer appends the
 * events of many companies in one transaction (an http.batch), each under its own company, and
 * reads one company at a time; verification still reads whole chains.
 */
let writer: Knex
let owner: Knex

beforeAll(async () => {
  await migrateAudit()
  writer = writerDb()
  owner = ownerDb()
})
afterAll(async () => {
  await writer.destroy()
  await owner.destroy()
})

const draftsOf = (companies: number[]) =>
  companies.map((companyId) =>
    toAuditDraft(domainEvent('patient.created', patientData(), { principal: testPrincipal({ companyId }) })),
  )

describe('audit.events row-level security', () => {
  it('is enabled and forced, with the one policy', async () => {
    const { rows } = await owner.raw<{
      rows: Array<{ relrowsecurity: boolean; relforcerowsecurity: boolean; qual: string; with_check: string }>
    }>(
      `SELECT c.relrowsecurity, c.relforcerowsecurity, p.qual, p.with_check
         FROM pg_class c JOIN pg_policies p ON p.schemaname = 'audit' AND p.tablename = c.relname
        WHERE c.oid = 'audit.events'::regclass`,
    )
    expect(rows).toEqual([
      {
        relrowsecurity: true,
        relforcerowsecurity: true,
        qual: expect.stringContaining("current_setting('app.idempresa'"),
        with_check: rows[0]!.qual,
      },
    ])
    expect(TENANT_PREDICATE).toContain('idempresa')
  })

  it("appends several companies' events in one transaction; the writer then sees each company's alone", async () => {
    const [a, b] = [testPrincipal().companyId, testPrincipal().companyId]
    const sent: string[] = []
    const onQuery = (q: { sql: string }) => void sent.push(q.sql)
    writer.on('query', onQuery)
    const sealed = await writer.transaction((trx) => appendEvents(trx, draftsOf([a, b, a, b, a]), chainKey()))
    writer.off('query', onQuery)
    // Per company: its setting with its head's lock, its rows, the head's move.
    expect(sent.filter((q) => !/^(BEGIN|COMMIT)/i.test(q.trim()))).toHaveLength(6)
    expect(sealed.map((e) => [e.idempresa, e.seq])).toEqual([
      [a, 1],
      [b, 1],
      [a, 2],
      [b, 2],
      [a, 3],
    ])
    // No company set: nothing, not even with the company in the filter.
    expect(await writer('events').whereIn('idempresa', [a, b]).select('id')).toEqual([])
    const ids = async (company: number, other: number) =>
      (
        await companyTransaction(writer, company, (trx) =>
          trx('events').whereIn('idempresa', [company, other]).orderBy('seq').select('id'),
        )
      ).map((r) => r.id)
    expect(await ids(a, b)).toEqual(sealed.filter((e) => e.idempresa === a).map((e) => e.id))
    expect(await ids(b, a)).toEqual(sealed.filter((e) => e.idempresa === b).map((e) => e.id))
    for (const company of [a, b])
      await expect(verifyCompany(chainReader(writer), company, chainKey())).resolves.toMatchObject({
        ok: true,
        count: company === a ? 3 : 2,
      })
  })

  it('refuses the writer a row of another company than the one set, and the partitions themselves', async () => {
    const [a, b] = [testPrincipal().companyId, testPrincipal().companyId]
    const [draft] = draftsOf([b])
    const forged = sealEvent(draft!, { seq: 1, prevHash: '0'.repeat(64), recordedAt: new Date() }, chainKey())
    await expect(
      writer.transaction(async (trx) => {
        await setCompany(trx, a)
        await trx('events').insert({ ...toRow(forged), http: null })
      }),
    ).rejects.toMatchObject({ code: '42501' })
    expect(await eventsOf(owner, b)).toEqual([])
    // Only the parent carries the policy: the writer may not read a partition directly.
    await expect(writer.raw('SELECT count(*) FROM events_default')).rejects.toMatchObject({ code: '42501' })
  })
})
