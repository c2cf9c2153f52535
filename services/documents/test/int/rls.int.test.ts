import { companyRead } from '@clinic/platform'
import { injectAs, testPrincipal } from '@clinic/platform/testing'
import type { Knex } from 'knex'
import { ConsentsRepository } from '../../src/db/repositories/consents-repository'
import { ContentRepository } from '../../src/db/repositories/content-repository'
import { DocumentsRepository } from '../../src/db/repositories/documents-repository'
import { multipart, png, startApp, upload, type Harness } from '../helpers'

let h: Harness
beforeAll(async () => {
  h = await startApp({ clock: () => new Date('2026-11-27T10:00:00Z') })
})
afterAll(() => h.close())

type Json = Record<string, any> // eslint-disable-line @typescript-eslint/no-explicit-any
/** Every tenant table of the documents schema (the outbox and processed_events span companies). */
const TABLES = [
  'documents',
  'blobs',
  'blob_chunks',
  'consent_templates',
  'consents',
  'idempotency_keys',
] as const

/**
 * A company with a row in every table: an uploaded document (its blob and chunks), a template and
 * a consent asked with an Idempotency-Key.
 */
async function recordOf() {
  const principal = testPrincipal()
  const as = injectAs(h.app, principal)
  const patient = h.far.patient(principal.companyId)
  const ok = <T extends { statusCode: number; body: string; json(): Json }>(res: T, what: string) => {
    if (res.statusCode >= 300) throw new Error(`${what}: ${res.statusCode} ${res.body}`)
    return res.json()
  }
  const document = ok(
    await upload(
      h.app,
      principal,
      multipart({ patient_id: patient, category: 'imaging' }, { bytes: png(64) }),
    ),
    'upload',
  )
  const template = ok(
    await as('POST', '/consents/templates', { key: 'rls', language: 'es', title: 'RLS', body: 'Texto.' }),
    'template',
  )
  const consent = ok(
    await as(
      'POST',
      '/consents',
      { patient_id: patient, template_key: 'rls', send: false },
      { 'idempotency-key': 'rls' },
    ),
    'consent',
  )
  return { companyId: principal.companyId, document, template, consent }
}

/** `fn` in a transaction of the service role with `app.idempresa` set to `company` (or not set). */
const asCompany = <T>(company: number | undefined, fn: (trx: Knex.Transaction) => Promise<T>) =>
  h.knex.transaction(async (trx) => {
    if (company !== undefined) await trx.raw(`select set_config('app.idempresa', ?, true)`, [String(company)])
    return fn(trx)
  })

/** The second wall: the service role sees a company only inside a transaction that names it. */
describe('row-level security', () => {
  test('without app.idempresa the service role sees no row of any documents table', async () => {
    const c = await recordOf()
    for (const table of TABLES) {
      const owned = (await h.owner(table).where({ idempresa: c.companyId })).length
      expect([table, owned > 0]).toEqual([table, true])
      expect([table, await h.knex(table).select('idempresa')]).toEqual([table, []])
    }
  })

  test('with a company set, a query without a company filter sees only that company, in every table', async () => {
    await recordOf()
    const b = await recordOf()
    for (const table of TABLES) {
      const seen = await asCompany(b.companyId, (trx) => trx(table).distinct('idempresa'))
      expect([table, seen]).toEqual([table, [{ idempresa: b.companyId }]])
    }
  })

  test('a one-statement read (companyRead) sees only the company it names', async () => {
    const a = await recordOf()
    const b = await recordOf()
    const named = (table: string, where: Record<string, unknown>) =>
      h
        .knex(table)
        .where({ idempresa: a.companyId, ...where })
        .select('idempresa')
    for (const [table, where] of [
      ['documents', { id: a.document.id }],
      ['blob_chunks', {}],
      ['consents', { id: a.consent.id }],
      ['consent_templates', { id: a.template.id }],
    ] as const) {
      expect([table, await companyRead(h.knex, b.companyId, named(table, where))]).toEqual([table, []])
      expect([table, (await companyRead(h.knex, a.companyId, named(table, where))).length > 0]).toEqual([
        table,
        true,
      ])
    }
  })

  test('the service role cannot write a row of another company, nor change or delete one', async () => {
    const a = await recordOf()
    const b = await recordOf()
    const asB = <T>(fn: (trx: Knex.Transaction) => Promise<T>) => asCompany(b.companyId, fn)
    await expect(
      asB((trx) =>
        trx('consent_templates').insert({
          idempresa: a.companyId,
          id: '0190c5a0-0000-7000-8000-0000000000aa',
          key: 'rls',
          language: 'es',
          version: 99,
          title: 'x',
          body: 'x',
          text_sha256: 'a'.repeat(64),
        }),
      ),
    ).rejects.toThrow(/row-level security/)
    await expect(
      asB((trx) =>
        trx('blob_chunks').insert({
          idempresa: a.companyId,
          upload_id: '0190c5a0-0000-7000-8000-0000000000ab',
          seq: 0,
          data: Buffer.from('x'),
        }),
      ),
    ).rejects.toThrow(/row-level security/)
    expect(await asB((trx) => trx('documents').where({ id: a.document.id }).update({ title: 'x' }))).toBe(0)
    expect(
      await asB((trx) => trx('consents').where({ id: a.consent.id }).update({ status: 'granted' })),
    ).toBe(0)
    expect(await asB((trx) => trx('blob_chunks').where({ idempresa: a.companyId }).delete())).toBe(0)
    expect(await asB((trx) => trx('blobs').where({ idempresa: a.companyId }).delete())).toBe(0)
    expect(await asB((trx) => trx('idempotency_keys').where({ idempresa: a.companyId }).delete())).toBe(0)
    expect(await h.owner('documents').where({ id: a.document.id }).first()).toMatchObject({ title: null })
    expect(await h.owner('consents').where({ id: a.consent.id }).first()).toMatchObject({ status: 'pending' })
    expect(await h.owner('blob_chunks').where({ idempresa: a.companyId })).not.toHaveLength(0)
    expect(await h.owner('blobs').where({ idempresa: a.companyId })).toHaveLength(1)
  })

  test('even for its own company, it never deletes a document or a consent, nor rewrites a template', async () => {
    const c = await recordOf()
    const own = <T>(fn: (trx: Knex.Transaction) => Promise<T>) => asCompany(c.companyId, fn)
    const denied = /permission denied/
    await expect(own((trx) => trx('documents').where({ id: c.document.id }).delete())).rejects.toThrow(denied)
    await expect(own((trx) => trx('consents').where({ id: c.consent.id }).delete())).rejects.toThrow(denied)
    await expect(
      own((trx) => trx('consent_templates').where({ id: c.template.id }).update({ body: 'otro' })),
    ).rejects.toThrow(denied)
    await expect(
      own((trx) => trx('consent_templates').where({ id: c.template.id }).delete()),
    ).rejects.toThrow(denied)
    expect(await h.owner('consent_templates').where({ id: c.template.id }).first()).toMatchObject({
      body: 'Texto.',
    })
  })

  test('the setting is transaction-local: it does not leak to the next user of the connection', async () => {
    const c = await recordOf()
    await asCompany(c.companyId, async () => undefined)
    const seen = await Promise.all(Array.from({ length: 4 }, () => h.knex('consents').count({ n: '*' })))
    expect(seen.map(([r]) => Number(r!.n))).toEqual([0, 0, 0, 0])
  })

  test('due_consents (owner rights, for the expiry worker) names only pending consents past expiry, by company and id', async () => {
    const a = await recordOf()
    const b = await recordOf()
    const due = async (at: string) =>
      (await h.knex.raw(`select idempresa, id from due_consents(?, 1000)`, [at])).rows as Json[]
    const ours = (rows: Json[]) => rows.filter((r) => [a.companyId, b.companyId].includes(r.idempresa))
    expect(ours(await due('2026-12-04T09:59:59Z'))).toEqual([])
    expect(ours(await due('2026-12-04T10:00:00Z'))).toEqual(
      expect.arrayContaining([
        { idempresa: a.companyId, id: a.consent.id },
        { idempresa: b.companyId, id: b.consent.id },
      ]),
    )
  })
})

/** The first wall, checked without the second: the repositories on the owner connection (no RLS). */
describe('repository company scoping', () => {
  test('every read and write of documents and contents filters by the company it is given', async () => {
    const a = await recordOf()
    const b = await recordOf()
    const repo = new DocumentsRepository(h.owner)
    const content = new ContentRepository(h.owner)
    const other = b.companyId
    expect(await repo.findById(other, a.document.id)).toBeNull()
    expect((await repo.findById(a.companyId, a.document.id))?.id).toBe(a.document.id)
    const filter = { centers: null, status: 'available', offset: 0, limit: 100 } as const
    const listed = await repo.list(other, { ...filter, patientId: a.document.patient_id })
    expect(listed).toEqual({ rows: [], total: 0 })
    expect((await repo.list(other, filter)).rows.map((d) => d.id)).toEqual([b.document.id])
    await expect(repo.transaction(other, (tx) => tx.update(a.document.id, { title: 'x' }))).rejects.toThrow(
      'No such document',
    )
    expect(await repo.transaction(other, (tx) => tx.findById(a.document.id, { forUpdate: true }))).toBeNull()
    // B holds the same bytes (the same PNG): releasing them in B leaves A's alone.
    await repo.transaction(other, async (tx) => {
      await tx.update(b.document.id, { status: 'deleted' })
      await tx.content.release(b.document.sha256)
    })
    expect(await h.owner('blobs').where({ idempresa: other })).toEqual([])
    const bytes: Buffer[] = []
    for await (const chunk of content.read(a.companyId, a.document.sha256)) bytes.push(chunk)
    expect(Buffer.concat(bytes).equals(png(64))).toBe(true)
    await expect(async () => {
      for await (const _ of content.read(other, a.document.sha256)) void _
    }).rejects.toThrow(/is missing/)
  })

  test('every read and write of templates and consents filters by the company it is given', async () => {
    const a = await recordOf()
    const b = await recordOf()
    const repo = new ConsentsRepository(h.owner)
    const other = b.companyId
    expect(await repo.findById(other, a.consent.id)).toBeNull()
    expect(await repo.findTemplate(other, a.template.id)).toBeNull()
    expect((await repo.latestTemplate(other, 'rls', 'es'))?.id).toBe(b.template.id)
    expect((await repo.latestTemplate(a.companyId, 'rls', 'es'))?.id).toBe(a.template.id)
    expect(await repo.linkConsent(other, a.consent.id)).toBeNull()
    await expect(repo.clinicOf(other, a.consent.id)).rejects.toThrow('No such consent')
    const page = { centers: null, offset: 0, limit: 100 }
    expect((await repo.list(other, page)).rows.map((c) => c.id)).toEqual([b.consent.id])
    expect((await repo.listTemplates(other, page)).rows.map((t) => t.id)).toEqual([b.template.id])
    await expect(
      repo.transaction(other, (tx) => tx.update(a.consent.id, { status: 'granted' })),
    ).rejects.toThrow('No such consent')
    expect(await repo.transaction(other, (tx) => tx.documents.findById(a.document.id))).toBeNull()
    expect(await repo.findById(a.companyId, a.consent.id)).toMatchObject({ status: 'pending', version: 1 })
  })
})
