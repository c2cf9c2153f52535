import { getDocument } from '../../src/domain/get-document'
import { getDocumentContent, parseRange } from '../../src/domain/get-document-content'
import { FakeDocumentStore, bytesOf, codeOf, ctxOf, problemOf } from '../fakes'

describe('parseRange: one bytes= range of RFC 9110 against a content of 100 bytes', () => {
  it.each([
    ['bytes=0-9', { start: 0, end: 9 }],
    ['bytes=10-10', { start: 10, end: 10 }],
    ['bytes=90-', { start: 90, end: 99 }],
    ['bytes=99-', { start: 99, end: 99 }],
    // An end past the content is cut at its last byte.
    ['bytes=50-1000', { start: 50, end: 99 }],
    ['bytes=0-99', { start: 0, end: 99 }],
    // The last n bytes; more than there are is all of them.
    ['bytes=-1', { start: 99, end: 99 }],
    ['bytes=-10', { start: 90, end: 99 }],
    ['bytes=-100', { start: 0, end: 99 }],
    ['bytes=-500', { start: 0, end: 99 }],
    // Spaces around the header are no part of it.
    ['  bytes=1-2 ', { start: 1, end: 2 }],
  ])('%s -> %j', (header, range) => expect(parseRange(header, 100)).toEqual(range))

  it.each([
    [undefined],
    [''],
    // Not a form it takes: the whole content is a valid answer to each.
    ['bytes=-'],
    ['bytes=0-9,20-29'],
    ['items=0-9'],
    ['bytes=a-b'],
    ['bytes 0-9'],
    ['xbytes=0-9'],
    ['bytes=0-9x'],
    ['bytes=1.5-2'],
    // An end before its start is no valid range.
    ['bytes=10-9'],
    ['bytes=200-150'],
  ])('%j -> the whole content (null)', (header) => expect(parseRange(header, 100)).toBeNull())

  it('416 with the size when the range lies outside the content', () => {
    for (const [header, size] of [
      ['bytes=100-', 100],
      ['bytes=100-200', 100],
      ['bytes=5000-', 100],
      ['bytes=-0', 100],
      ['bytes=0-', 0],
      ['bytes=-5', 0],
    ] as const) {
      let thrown: unknown
      try {
        parseRange(header, size)
      } catch (err) {
        thrown = err
      }
      expect([header, thrown]).toMatchObject([
        header,
        {
          status: 416,
          code: 'range_not_satisfiable',
          detail: `the content is ${size} bytes`,
          headers: { 'content-range': `bytes */${size}` },
        },
      ])
    }
  })

  it('a content of one byte: its only byte, asked for either way', () => {
    expect(parseRange('bytes=0-0', 1)).toEqual({ start: 0, end: 0 })
    expect(parseRange('bytes=-1', 1)).toEqual({ start: 0, end: 0 })
  })
})

describe('getDocumentContent', () => {
  const BYTES = Buffer.from('0123456789abcdefghij')
  function setup() {
    const store = new FakeDocumentStore()
    const ctx = ctxOf()
    const company = ctx.auth.companyId
    const sha256 = 'c'.repeat(64)
    store.content.blobs.set(`${company}:${sha256}`, { uploadId: 'u', bytes: BYTES })
    const doc = store.add(company, { sha256, size_bytes: BYTES.length, codalmacen: 'ALM1' })
    const read = (input: { range?: string; ifRange?: string; id?: string; queryCenter?: string } = {}) =>
      getDocumentContent(ctx, { store, content: store.content }, { id: doc.id, ...input })
    return { store, ctx, company, doc, read, etag: `"${sha256}"` }
  }

  it('serves the whole content with its document when no range is asked for', async () => {
    const { read, doc } = setup()
    const content = await read()
    expect(content.document).toEqual(doc)
    expect(content).not.toHaveProperty('range')
    expect((await bytesOf(content.bytes)).toString()).toBe(BYTES.toString())
  })

  it('serves one range asked for, and says which', async () => {
    const { read } = setup()
    const content = await read({ range: 'bytes=2-4' })
    expect(content.range).toEqual({ start: 2, end: 4 })
    expect((await bytesOf(content.bytes)).toString()).toBe('234')
    expect((await read({ range: 'bytes=-3' })).range).toEqual({ start: 17, end: 19 })
  })

  it("If-Range with this content's ETag: the range; with another validator: the whole content", async () => {
    const { read, etag } = setup()
    const honoured = await read({ range: 'bytes=2-4', ifRange: etag })
    expect(honoured.range).toEqual({ start: 2, end: 4 })
    for (const ifRange of [
      `"${'d'.repeat(64)}"`,
      `W/${etag}`,
      etag.slice(1, -1),
      'Fri, 27 Nov 2026 10:00:00 GMT',
      '',
    ]) {
      const whole = await read({ range: 'bytes=2-4', ifRange })
      expect([ifRange, whole.range]).toEqual([ifRange, undefined])
      expect((await bytesOf(whole.bytes)).length).toBe(BYTES.length)
    }
  })

  it('416 for a range outside the content, unless If-Range no longer matches', async () => {
    const { read } = setup()
    expect(await problemOf(read({ range: 'bytes=20-' }))).toMatchObject({
      status: 416,
      code: 'range_not_satisfiable',
      detail: 'the content is 20 bytes',
    })
    expect((await read({ range: 'bytes=20-', ifRange: '"other"' })).range).toBeUndefined()
  })

  it('410 document_deleted for a deleted document, whatever the range', async () => {
    const { store, company, read, doc } = setup()
    store.seed(company, { ...doc, status: 'deleted' })
    expect(await problemOf(read())).toMatchObject({ status: 410, code: 'document_deleted' })
    expect(await codeOf(read({ range: 'bytes=0-1' }))).toBe('document_deleted')
  })

  it("404 for an unknown id, another company's, or a center the caller may not see", async () => {
    const { read, doc, store } = setup()
    expect(await codeOf(read({ id: '0190c5a0-0000-7000-8000-00000000dead' }))).toBe('not_found')
    expect(await codeOf(read({ queryCenter: 'ALM2' }))).toBe('not_found')
    const other = ctxOf()
    expect(await codeOf(getDocumentContent(other, { store, content: store.content }, { id: doc.id }))).toBe(
      'not_found',
    )
    expect(await codeOf(read({ id: doc.id.toUpperCase() }))).toBe('ok')
  })

  it('getDocument: any case of the id, deleted ones too (their metadata stays)', async () => {
    const { store, ctx, company, doc } = setup()
    store.seed(company, { ...doc, status: 'deleted' })
    expect(await getDocument(ctx, store, { id: doc.id.toUpperCase() })).toMatchObject({
      id: doc.id,
      status: 'deleted',
    })
    expect(await problemOf(getDocument(ctx, store, { id: doc.id, queryCenter: 'ALM2' }))).toMatchObject({
      code: 'not_found',
      detail: 'No such document',
    })
  })
})
