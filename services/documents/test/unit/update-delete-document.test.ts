import type { Principal } from '@clinic/platform/core'
import { deleteDocument } from '../../src/domain/delete-document'
import { updateDocument } from '../../src/domain/update-document'
import type { Document } from '../../src/schemas/document'
import { FakeDocumentStore, NOW, codeOf, ctxOf, loggingCtxOf, problemOf } from '../fakes'

/** PATCH and DELETE of a document on the fake store, its clock moved on from the document's time. */
function setup(principal: Partial<Principal> = {}) {
  const later = new Date(NOW.getTime() + 60_000)
  const store = new FakeDocumentStore(undefined, () => later)
  const { ctx, lines } = loggingCtxOf(principal)
  const company = ctx.auth.companyId
  const doc = store.add(company, { title: 'Informe', category: 'report', codalmacen: 'ALM1' })
  const patch = (
    p: Partial<Pick<Document, 'title' | 'category'>>,
    o: { ifMatch?: string; id?: string } = {},
  ) => updateDocument(ctx, store, { id: o.id ?? doc.id, patch: p, ifMatch: o.ifMatch })
  const remove = (id = doc.id, queryCenter?: string) => deleteDocument(ctx, store, { id, queryCenter })
  return { store, ctx, lines, company, doc, patch, remove, later: later.toISOString() }
}

describe('updateDocument', () => {
  it.each([
    [{ title: 'Informe OCT' }, ['title']],
    [{ title: null }, ['title']],
    [{ category: 'imaging' }, ['category']],
    [{ category: 'consent' }, ['category']],
    [{ title: 'Informe OCT', category: 'imaging' }, ['title', 'category']],
    [{ title: 'Informe', category: 'imaging' }, ['category']],
  ] as const)('%j changes %j: a new version, document.updated naming them', async (p, changed) => {
    const { patch, store, doc, company, later } = setup()
    const updated = await patch(p)
    expect(updated).toEqual({ ...doc, ...p, version: 2, updated_at: later })
    expect(await store.findById(company, doc.id)).toEqual(updated)
    expect(store.locked).toEqual([doc.id])
    expect(store.events.map((e) => [e.type, e.subject, e.codalmacen])).toEqual([
      ['document.updated', doc.id, 'ALM1'],
    ])
    expect(store.events[0]!.data).toEqual({
      id: doc.id,
      patient_id: doc.patient_id,
      category: updated.category,
      content_type: doc.content_type,
      size_bytes: doc.size_bytes,
      sha256: doc.sha256,
      status: 'available',
      version: 2,
      changes: changed,
    })
  })

  it.each([
    [{}],
    [{ title: 'Informe' }],
    [{ category: 'report' }],
    [{ title: 'Informe', category: 'report' }],
  ] as const)(
    'a PATCH that changes nothing (%j) keeps version and updated_at and emits nothing',
    async (p) => {
      const { patch, store, doc, company } = setup()
      expect(await patch(p)).toEqual(doc)
      expect(store.events).toEqual([])
      expect(await store.findById(company, doc.id)).toEqual(doc)
    },
  )

  it('If-Match: the current version (or *, a list, a weak tag) goes through; any other is 412, nothing written', async () => {
    for (const ifMatch of ['"1"', '*', '"7", "1"', 'W/"1"']) {
      const { patch } = setup()
      expect([ifMatch, (await patch({ title: 'x' }, { ifMatch })).version]).toEqual([ifMatch, 2])
    }
    for (const ifMatch of ['"2"', '1', '']) {
      const { patch, store } = setup()
      expect([ifMatch, await codeOf(patch({ title: 'x' }, { ifMatch }))]).toEqual([
        ifMatch,
        'version_mismatch',
      ])
      // Even a PATCH that would change nothing.
      expect(await codeOf(patch({}, { ifMatch }))).toBe('version_mismatch')
      expect(store.events).toEqual([])
    }
  })

  it('410 for a deleted document, even for a PATCH that changes nothing', async () => {
    const { patch, store, company, doc } = setup()
    store.seed(company, { ...doc, status: 'deleted' })
    expect(await problemOf(patch({ title: 'x' }))).toMatchObject({ status: 410, code: 'document_deleted' })
    expect(await codeOf(patch({}))).toBe('document_deleted')
    expect(store.events).toEqual([])
  })

  it('evidence keeps its category (409 document_in_use), but its title may change', async () => {
    const { patch, store, company, doc } = setup()
    store.seed(company, { ...doc, category: 'consent' })
    expect(await problemOf(patch({ category: 'other' }))).toEqual({
      status: 409,
      code: 'document_in_use',
      detail: 'a document of category consent is evidence and cannot be recategorised',
      errors: undefined,
    })
    expect((await patch({ title: 'Consentimiento firmado' })).title).toBe('Consentimiento firmado')
    const scanned = store.add(company, { category: 'report' })
    store.referenced.add(`${company}:${scanned.id}`)
    expect(await problemOf(patch({ category: 'other' }, { id: scanned.id }))).toMatchObject({
      code: 'document_in_use',
      detail: 'a consent points to this document; it cannot be recategorised',
    })
    expect((await store.findById(company, scanned.id))?.category).toBe('report')
    expect(store.events.map((e) => e.type)).toEqual(['document.updated'])
  })

  it("404 for another company's document or a center the caller may not see; any case of the id", async () => {
    const { store, doc, company } = setup()
    const other = ctxOf()
    expect(await codeOf(updateDocument(other, store, { id: doc.id, patch: { title: 'x' } }))).toBe(
      'not_found',
    )
    const limited = ctxOf({ companyId: company, allowedCenters: ['ALM2'] })
    expect(await codeOf(updateDocument(limited, store, { id: doc.id, patch: { title: 'x' } }))).toBe(
      'not_found',
    )
    const ctx = ctxOf({ companyId: company })
    expect(await codeOf(updateDocument(ctx, store, { id: doc.id, patch: {}, queryCenter: 'ALM2' }))).toBe(
      'not_found',
    )
    const upper = await updateDocument(ctx, store, { id: doc.id.toUpperCase(), patch: { title: 'x' } })
    expect(upper).toMatchObject({ id: doc.id, title: 'x' })
  })
})

describe('deleteDocument', () => {
  it('marks it deleted (the metadata stays), releases its content after that, emits document.deleted', async () => {
    const { remove, store, company, doc, lines, later } = setup()
    await remove(doc.id.toUpperCase())
    expect(await store.findById(company, doc.id)).toEqual({
      ...doc,
      status: 'deleted',
      version: 2,
      updated_at: later,
    })
    expect(store.locked).toEqual([doc.id])
    // Released once the document no longer holds it.
    expect(store.content.log).toEqual([{ op: 'release', sha256: doc.sha256, holders: [] }])
    expect(
      store.events.map((e) => [e.type, e.subject, e.codalmacen, (e.data as { status: string }).status]),
    ).toEqual([['document.deleted', doc.id, 'ALM1', 'deleted']])
    expect(lines.map((l) => [l.msg, l.document_id])).toEqual([['document deleted', doc.id]])
  })

  it('keeps the bytes another document of the company still holds', async () => {
    const { remove, store, company, doc } = setup()
    store.content.blobs.set(`${company}:${doc.sha256}`, { uploadId: 'u', bytes: Buffer.from('x') })
    const twin = store.add(company, { sha256: doc.sha256 })
    await remove()
    expect(store.content.log).toEqual([{ op: 'release', sha256: doc.sha256, holders: [twin.id] }])
    expect(store.content.blobs.has(`${company}:${doc.sha256}`)).toBe(true)
  })

  it('deleting a deleted document changes nothing (DELETE is idempotent)', async () => {
    const { remove, store, company, doc } = setup()
    await remove()
    await remove()
    expect((await store.findById(company, doc.id))?.version).toBe(2)
    expect(store.events).toHaveLength(1)
    expect(store.content.log).toHaveLength(1)
  })

  it('409 document_in_use for evidence: a consent document, or one a consent points to; it keeps its bytes', async () => {
    const { remove, store, company, doc } = setup()
    const consent = store.add(company, { category: 'consent' })
    expect(await problemOf(remove(consent.id))).toMatchObject({
      status: 409,
      code: 'document_in_use',
      detail: 'a document of category consent is evidence and cannot be deleted',
    })
    store.referenced.add(`${company}:${doc.id}`)
    expect(await problemOf(remove())).toMatchObject({
      code: 'document_in_use',
      detail: 'a consent points to this document; it cannot be deleted',
    })
    expect((await store.findById(company, doc.id))?.status).toBe('available')
    expect((await store.findById(company, consent.id))?.status).toBe('available')
    expect([store.events, store.content.log]).toEqual([[], []])
  })

  it("404 for another company's document or a center the caller may not see", async () => {
    const { store, doc, company, remove } = setup()
    expect(await codeOf(deleteDocument(ctxOf(), store, { id: doc.id }))).toBe('not_found')
    const limited = ctxOf({ companyId: company, allowedCenters: ['ALM2'] })
    expect(await codeOf(deleteDocument(limited, store, { id: doc.id }))).toBe('not_found')
    expect(await codeOf(remove(doc.id, 'ALM2'))).toBe('not_found')
    expect((await store.findById(company, doc.id))?.status).toBe('available')
  })
})
