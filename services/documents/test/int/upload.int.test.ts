import { createHash } from 'node:crypto'
import { assertionHeaders } from '@clinic/platform'
import { injectAs, outboxOf, testPrincipal, testSigner } from '@clinic/platform/testing'
import { dicom, multipart, pdf, png, startApp, upload, type Harness } from '../helpers'

const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex')

let h: Harness
beforeAll(async () => {
  h = await startApp({ maxBytes: 1024 * 1024 })
})
afterAll(() => h.close())

/** The company's rows of content: blobs and chunks (as the owner, past row-level security). */
async function stored(companyId: number) {
  const blobs = await h.owner('blobs').where({ idempresa: companyId }).select('sha256')
  const chunks = await h.owner('blob_chunks').where({ idempresa: companyId }).count({ n: '*' }).first()
  return { blobs: blobs.map((b) => b.sha256 as string), chunks: Number(chunks?.n) }
}

describe('POST /documents', () => {
  it('stores a PDF, typed from its bytes, with its hash and size, and emits document.created', async () => {
    const p = testPrincipal()
    const patientId = h.far.patient(p.companyId)
    const bytes = pdf(300_000)
    const res = await upload(
      h.app,
      p,
      multipart(
        { patient_id: patientId, category: 'referral', title: 'Volante' },
        { bytes, filename: 'C:\\scans\\vol\u0007ante.pdf' },
      ),
    )
    expect(res.statusCode).toBe(201)
    const doc = res.json()
    expect(doc).toMatchObject({
      patient_id: patientId,
      category: 'referral',
      title: 'Volante',
      filename: 'volante.pdf',
      content_type: 'application/pdf',
      size_bytes: bytes.length,
      sha256: sha(bytes),
      status: 'available',
      uploaded_by: 'test-user',
      version: 1,
    })
    expect(res.headers.location).toBe(`/documents/${doc.id}`)
    const outbox = await outboxOf(h.owner, p.companyId, doc.id)
    expect(outbox.map((r) => r.type)).toEqual(['document.created'])
    // The bytes come back as sent, whole and by range.
    const as = injectAs(h.app, p)
    const got = await as('GET', `/documents/${doc.id}/content`)
    expect(got.statusCode).toBe(200)
    expect(got.rawPayload.equals(bytes)).toBe(true)
    expect(got.headers).toMatchObject({
      'content-type': 'application/pdf',
      'x-content-type-options': 'nosniff',
      'content-security-policy': "sandbox; default-src 'none'",
      'cache-control': 'private, no-store',
      etag: `"${sha(bytes)}"`,
    })
    expect(got.headers['content-disposition']).toBe(
      `attachment; filename="volante.pdf"; filename*=UTF-8''volante.pdf`,
    )
    const part = await as('GET', `/documents/${doc.id}/content`, undefined, { range: 'bytes=262140-262150' })
    expect(part.statusCode).toBe(206)
    expect(part.headers['content-range']).toBe(`bytes 262140-262150/${bytes.length}`)
    expect(part.rawPayload.equals(bytes.subarray(262140, 262151))).toBe(true)
    const tail = await as('GET', `/documents/${doc.id}/content`, undefined, { range: 'bytes=-5' })
    expect(tail.rawPayload.equals(bytes.subarray(bytes.length - 5))).toBe(true)
    const outside = await as('GET', `/documents/${doc.id}/content`, undefined, {
      range: `bytes=${bytes.length}-`,
    })
    expect(outside.statusCode).toBe(416)
  })

  it('refuses HTML named scan.pdf sent as application/pdf (415 naming text/html); nothing is stored', async () => {
    const p = testPrincipal()
    const res = await upload(
      h.app,
      p,
      multipart(
        { patient_id: h.far.patient(p.companyId), category: 'report' },
        {
          bytes: Buffer.from('<!DOCTYPE html><html><script>alert(1)</script></html>'),
          filename: 'scan.pdf',
          contentType: 'application/pdf',
        },
      ),
    )
    expect(res.statusCode).toBe(415)
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/)
    expect(res.json()).toMatchObject({ code: 'unsupported_media_type', found: 'text/html' })
    expect(await stored(p.companyId)).toEqual({ blobs: [], chunks: 0 })
  })

  it('stores a PNG renamed .pdf as image/png, and DICOM as application/dicom', async () => {
    const p = testPrincipal()
    const patient_id = h.far.patient(p.companyId)
    const asPng = await upload(
      h.app,
      p,
      multipart(
        { patient_id, category: 'imaging' },
        { bytes: png(), filename: 'fondo.pdf', contentType: 'application/pdf' },
      ),
    )
    expect(asPng.statusCode).toBe(201)
    expect(asPng.json()).toMatchObject({ content_type: 'image/png', filename: 'fondo.pdf' })
    const asDicom = await upload(
      h.app,
      p,
      multipart({ patient_id, category: 'imaging' }, { bytes: dicom(), filename: 'oct' }),
    )
    expect(asDicom.json()).toMatchObject({ content_type: 'application/dicom' })
  })

  it('a polyglot (HTML with a 128-byte preamble and DICM) is DICOM, and downloads as poly.dcm, never poly.html', async () => {
    const p = testPrincipal()
    const html = Buffer.from('<!DOCTYPE html><html><body><script>alert(1)</script>')
    const bytes = Buffer.concat([
      html,
      Buffer.alloc(128 - html.length, 0x20),
      Buffer.from('DICM'),
      Buffer.from('</body></html>'),
    ])
    expect(bytes.subarray(128, 132).toString()).toBe('DICM')
    const res = await upload(
      h.app,
      p,
      multipart(
        { patient_id: h.far.patient(p.companyId), category: 'imaging' },
        { bytes, filename: 'poly.html', contentType: 'text/html' },
      ),
    )
    expect(res.statusCode).toBe(201)
    expect(res.json()).toMatchObject({ content_type: 'application/dicom', filename: 'poly.html' })
    const got = await injectAs(h.app, p)('GET', `/documents/${res.json().id}/content`)
    expect(got.headers['content-type']).toBe('application/dicom')
    expect(got.headers['content-disposition']).toBe(
      `attachment; filename="poly.dcm"; filename*=UTF-8''poly.dcm`,
    )
  })

  it('names every download with the extension of its detected type: replaced, appended, or kept when right', async () => {
    const p = testPrincipal()
    const patient_id = h.far.patient(p.companyId)
    const as = injectAs(h.app, p)
    const named = async (bytes: Buffer, filename: string) => {
      const doc = (
        await upload(h.app, p, multipart({ patient_id, category: 'imaging' }, { bytes, filename }))
      ).json()
      const got = await as('GET', `/documents/${doc.id}/content`)
      return /filename\*=UTF-8''(.*)$/.exec(got.headers['content-disposition'] as string)![1]
    }
    expect(await named(png(1), 'fondo.pdf')).toBe('fondo.png')
    expect(await named(png(2), 'retinografía')).toBe('retinograf%C3%ADa.png')
    expect(await named(png(3), 'FONDO.PNG')).toBe('FONDO.PNG')
    expect(await named(pdf(4), 'informe 12.5')).toBe('informe%2012.5.pdf')
    expect(await named(dicom(), 'oct.exe')).toBe('oct.dcm')
  })

  it('cuts an upload over the limit off with 413 and keeps nothing', async () => {
    const p = testPrincipal()
    const res = await upload(
      h.app,
      p,
      multipart(
        { patient_id: h.far.patient(p.companyId), category: 'imaging' },
        { bytes: png(1024 * 1024 + 10), filename: 'big.png' },
      ),
    )
    expect(res.statusCode).toBe(413)
    expect(res.json().code).toBe('payload_too_large')
    expect(await stored(p.companyId)).toEqual({ blobs: [], chunks: 0 })
  })

  it('422 for a patient or appointment the company does not have; 400 for bad fields or no file', async () => {
    const p = testPrincipal()
    const other = testPrincipal()
    const foreign = h.far.patient(other.companyId)
    const unknownPatient = await upload(
      h.app,
      p,
      multipart({ patient_id: foreign, category: 'other' }, { bytes: png() }),
    )
    expect(unknownPatient.json()).toMatchObject({ status: 422, code: 'unknown_patient' })
    const patient_id = h.far.patient(p.companyId)
    const unknownAppointment = await upload(
      h.app,
      p,
      multipart(
        { patient_id, category: 'other', appointment_id: h.far.appointment(other.companyId, foreign) },
        { bytes: png() },
      ),
    )
    expect(unknownAppointment.json()).toMatchObject({ status: 422, code: 'unknown_appointment' })
    const withAppointment = await upload(
      h.app,
      p,
      multipart(
        { patient_id, category: 'other', appointment_id: h.far.appointment(p.companyId, patient_id) },
        { bytes: png() },
      ),
    )
    expect(withAppointment.statusCode).toBe(201)
    const bad = await upload(
      h.app,
      p,
      multipart({ patient_id: 'nope', category: 'selfie', extra: 'x' }, { bytes: png() }),
    )
    expect(bad.statusCode).toBe(400)
    expect(
      bad
        .json()
        .errors.map((e: { path: string }) => e.path)
        .sort(),
    ).toEqual(['/category', '/extra', '/patient_id'])
    const noFile = await upload(h.app, p, multipart({ patient_id, category: 'other' }))
    expect(noFile.json()).toMatchObject({ status: 400, errors: [{ path: '/file' }] })
    // Nothing of these is kept but the one accepted upload's bytes.
    expect((await stored(p.companyId)).blobs).toEqual([sha(png())])
  })

  it('400 for multipart garbage: no boundary, a truncated body, a huge part header', async () => {
    const p = testPrincipal()
    const patient_id = h.far.patient(p.companyId)
    const good = multipart({ patient_id, category: 'other' }, { bytes: png(5000) })
    const noBoundary = await upload(h.app, p, { body: good.body, contentType: 'multipart/form-data' })
    expect(noBoundary.statusCode).toBe(400)
    const truncated = await upload(h.app, p, {
      body: good.body.subarray(0, good.body.length - 2000),
      contentType: good.contentType,
    })
    expect(truncated.statusCode).toBe(400)
    const boundary = 'xyz'
    const huge = Buffer.from(
      `--${boundary}\r\nContent-Disposition: form-data; name="patient_id"\r\nX-Long: ${'a'.repeat(100_000)}\r\n\r\n${patient_id}\r\n--${boundary}--\r\n`,
    )
    const hugeHeader = await upload(h.app, p, {
      body: huge,
      contentType: `multipart/form-data; boundary=${boundary}`,
    })
    expect(hugeHeader.statusCode).toBe(400)
    expect(await stored(p.companyId)).toEqual({ blobs: [], chunks: 0 })
  })

  it('Idempotency-Key: the same fields and bytes under a new boundary replay; other bytes conflict', async () => {
    const p = testPrincipal()
    const patient_id = h.far.patient(p.companyId)
    const key = { 'idempotency-key': 'upload-1' }
    const first = await upload(
      h.app,
      p,
      multipart({ patient_id, category: 'other' }, { bytes: png(10) }),
      key,
    )
    const again = await upload(
      h.app,
      p,
      multipart({ patient_id, category: 'other' }, { bytes: png(10) }),
      key,
    )
    expect(first.statusCode).toBe(201)
    expect(again.statusCode).toBe(201)
    expect(again.headers['idempotent-replayed']).toBe('true')
    expect(again.json().id).toBe(first.json().id)
    const other = await upload(
      h.app,
      p,
      multipart({ patient_id, category: 'other' }, { bytes: png(11) }),
      key,
    )
    expect(other.json()).toMatchObject({ status: 409, code: 'idempotency_conflict' })
    expect(await stored(p.companyId)).toMatchObject({ blobs: [sha(png(10))], chunks: 1 })
  })

  it('takes an assertion naming no body hash only on the upload route', async () => {
    const p = testPrincipal()
    const url = '/documents/0190c5a0-0000-7000-8000-00000000abcd'
    const asserted = await assertionHeaders(
      { auth: p, requestId: 'test-streamed-elsewhere' },
      { method: 'PATCH', path: url, streamed: true },
      testSigner(),
    )
    const res = await h.app.inject({ method: 'PATCH', url, headers: asserted, payload: { title: 'x' } })
    expect(res.statusCode).toBe(401)
  })
})

describe('the other operations', () => {
  it('lists, reads, patches; DELETE keeps the metadata, answers 410 for content, and frees shared bytes last', async () => {
    const p = testPrincipal()
    const as = injectAs(h.app, p)
    const patient_id = h.far.patient(p.companyId)
    const bytes = png(300)
    const a = (await upload(h.app, p, multipart({ patient_id, category: 'imaging' }, { bytes }))).json()
    const b = (await upload(h.app, p, multipart({ patient_id, category: 'report' }, { bytes }))).json()
    expect(b.sha256).toBe(a.sha256)
    expect(await stored(p.companyId)).toEqual({ blobs: [a.sha256], chunks: 1 })
    const list = await as('GET', `/documents?patient_id=${patient_id}`)
    expect(list.json().data.map((d: { id: string }) => d.id)).toEqual([b.id, a.id])
    expect(list.json().meta.total).toBe(2)
    const patched = await as(
      'PATCH',
      `/documents/${a.id}`,
      { title: 'Retinografía', category: 'report' },
      { 'if-match': '"1"' },
    )
    expect(patched.json()).toMatchObject({ title: 'Retinografía', category: 'report', version: 2 })
    const stale = await as('PATCH', `/documents/${a.id}`, { title: 'x' }, { 'if-match': '"1"' })
    expect(stale.statusCode).toBe(412)
    const readOnly = await as('PATCH', `/documents/${a.id}`, { sha256: 'x' })
    expect(readOnly.statusCode).toBe(400)

    const del = await h.app.inject({
      method: 'DELETE',
      url: `/documents/${a.id}`,
      headers: await headersFor(p, 'DELETE', `/documents/${a.id}`),
    })
    expect(del.statusCode).toBe(204)
    // b still holds the bytes.
    expect(await stored(p.companyId)).toEqual({ blobs: [a.sha256], chunks: 1 })
    expect((await as('GET', `/documents/${a.id}/content`)).json()).toMatchObject({
      status: 410,
      code: 'document_deleted',
    })
    expect((await as('GET', `/documents/${a.id}`)).json()).toMatchObject({ status: 'deleted' })
    expect((await as('GET', `/documents?patient_id=${patient_id}`)).json().meta.total).toBe(1)
    expect(
      (await as('GET', `/documents?status=deleted`)).json().data.map((d: { id: string }) => d.id),
    ).toEqual([a.id])
    expect((await as('GET', `/documents/${b.id}/content`)).rawPayload.equals(bytes)).toBe(true)

    await h.app.inject({
      method: 'DELETE',
      url: `/documents/${b.id}`,
      headers: await headersFor(p, 'DELETE', `/documents/${b.id}`),
    })
    expect(await stored(p.companyId)).toEqual({ blobs: [], chunks: 0 })
    const types = async (id: string) => (await outboxOf(h.owner, p.companyId, id)).map((r) => r.type)
    expect(await types(a.id)).toEqual(['document.created', 'document.updated', 'document.deleted'])
    expect(await types(b.id)).toEqual(['document.created', 'document.deleted'])
  })

  it("another company's document is a 404, its bytes unreachable", async () => {
    const p = testPrincipal()
    const other = testPrincipal()
    const doc = (
      await upload(
        h.app,
        p,
        multipart({ patient_id: h.far.patient(p.companyId), category: 'other' }, { bytes: png(7) }),
      )
    ).json()
    const as = injectAs(h.app, other)
    expect((await as('GET', `/documents/${doc.id}`)).statusCode).toBe(404)
    expect((await as('GET', `/documents/${doc.id}/content`)).statusCode).toBe(404)
    expect((await as('GET', '/documents')).json().meta.total).toBe(0)
  })
})

async function headersFor(p: ReturnType<typeof testPrincipal>, method: string, url: string) {
  const { gatewayHeaders } = await import('@clinic/platform/testing')
  return gatewayHeaders(p, method, url)
}
