import { SNIFF_BYTES } from '../../src/domain/detect-type'
import { pdf, png } from '../helpers'
import { codeOf, ctxOf, partsOf, problemOf } from '../fakes'
import { uploadWorld as setup } from '../upload-world'

/** uploadDocument's refusals (nothing kept) and its Idempotency-Key, on the fake stores. */

describe('uploadDocument: what it refuses, keeping nothing', () => {
  it('415 for bytes of another type, naming what they are, before anything is staged', async () => {
    const { upload, send, patient, store, states } = setup()
    const html = Buffer.from(`<html>${'x'.repeat(3 * SNIFF_BYTES)}</html>`)
    let read = 0
    async function* counted() {
      for (let at = 0; at < html.length; at += 1000) {
        read += 1000
        yield html.subarray(at, at + 1000)
      }
    }
    const err = await problemOf(
      send(
        (async function* () {
          yield { kind: 'field' as const, name: 'patient_id', value: patient }
          yield { kind: 'file' as const, name: 'file', filename: 'x.pdf', bytes: counted() }
        })(),
      ),
    )
    expect(err).toMatchObject({ status: 415, code: 'unsupported_media_type' })
    expect((err as { detail: string }).detail).toBe(
      "the file's bytes are text/html; accepted: PDF, JPEG, PNG, TIFF, WebP, HEIC, DICOM",
    )
    // Decided on the first SNIFF_BYTES: the rest was never read.
    expect(read).toBe(Math.ceil(SNIFF_BYTES / 1000) * 1000)
    expect(states()).toEqual([])
    expect(store.events).toEqual([])
    expect(await problemOf(upload({}, { bytes: Buffer.alloc(0) }))).toMatchObject({
      code: 'unsupported_media_type',
      detail: expect.stringContaining('an empty file'),
    })
  })

  it('decides as soon as it holds SNIFF_BYTES, not a piece later', async () => {
    const { send, patient, states } = setup()
    let read = 0
    async function* pieces() {
      for (let i = 0; i < 5; i++) {
        read += SNIFF_BYTES
        yield Buffer.alloc(SNIFF_BYTES, 0x41)
      }
    }
    const parts = (async function* () {
      yield { kind: 'field' as const, name: 'patient_id', value: patient }
      yield { kind: 'file' as const, name: 'file', filename: undefined, bytes: pieces() }
    })()
    expect(await codeOf(send(parts))).toBe('unsupported_media_type')
    expect([read, states()]).toEqual([SNIFF_BYTES, []])
  })

  it('413 one byte past the limit: its staged bytes discarded, nothing stored', async () => {
    const { upload, states, store } = setup({}, { maxBytes: 2 * SNIFF_BYTES })
    const exact = pdf(2 * SNIFF_BYTES - pdf().length)
    expect((await upload({}, { bytes: exact })).body.size_bytes).toBe(2 * SNIFF_BYTES)
    const over = Buffer.concat([exact, Buffer.from(' ')])
    expect(await problemOf(upload({}, { bytes: over }))).toMatchObject({
      status: 413,
      code: 'payload_too_large',
      detail: `files are limited to ${2 * SNIFF_BYTES} bytes`,
    })
    expect(states()).toEqual(['adopted', 'discarded'])
    expect(store.events.map((e) => e.type)).toEqual(['document.created'])
  })

  it('400 for a multipart that is not one upload: its staged bytes discarded', async () => {
    const { send, patient, states } = setup()
    const file = { bytes: png() }
    const fields = { patient_id: patient, category: 'imaging' }
    expect(await problemOf(send(partsOf(fields, { ...file, name: 'upload' })))).toMatchObject({
      status: 400,
      code: 'validation_failed',
      detail: 'the file goes in the part named "file", not "upload"',
    })
    const twoFiles = (async function* () {
      yield* partsOf(fields, file)
      yield* partsOf({}, file)
    })()
    expect(await problemOf(send(twoFiles))).toMatchObject({
      code: 'validation_failed',
      detail: 'one file per upload',
    })
    expect(await problemOf(send(partsOf(fields, file, { category: 'report' })))).toMatchObject({
      code: 'validation_failed',
      detail: 'the field "category" is sent twice',
      errors: [{ path: '', message: 'the field "category" is sent twice' }],
    })
    expect(await problemOf(send(partsOf(fields)))).toMatchObject({
      code: 'validation_failed',
      errors: [{ path: '/file', message: 'is required: a part named "file"' }],
    })
    expect(states()).toEqual(['discarded', 'discarded'])
  })

  it('400 naming every field that is not valid, at once', async () => {
    const { send, states } = setup()
    const err = (await problemOf(
      send(partsOf({ patient_id: 'nope', category: 'selfie', colour: 'red' }, { bytes: png() })),
    )) as { code: string; errors: Array<{ path: string; message: string }> }
    expect(err.code).toBe('validation_failed')
    expect(err.errors.map((e) => e.path).sort()).toEqual(expect.arrayContaining(['/category', '/patient_id']))
    expect(err.errors.length).toBeGreaterThanOrEqual(3)
    for (const e of err.errors) expect(e.message).toMatch(/\w/)
    expect(states()).toEqual(['discarded'])
  })

  it("422 for a patient, appointment or exam that is not this patient's in this company", async () => {
    const { upload, company, patients, appointments, exams, patient, states, store } = setup()
    const sibling = patients.add(company)
    const other = ctxOf()
    expect(await codeOf(upload({ patient_id: patients.add(other.auth.companyId) }))).toBe('unknown_patient')
    expect(await codeOf(upload({ appointment_id: appointments.add(company, sibling) }))).toBe(
      'unknown_appointment',
    )
    expect(await codeOf(upload({ exam_id: exams.add(company, sibling) }))).toBe('unknown_exam')
    expect(await codeOf(upload({ exam_id: exams.add(company, patient) }))).toBe('ok')
    expect(states()).toEqual(['discarded', 'discarded', 'discarded', 'adopted'])
    expect(store.events).toHaveLength(1)
  })

  it('a service that is down fails the upload (503) and discards its bytes', async () => {
    const { upload, patients, states } = setup()
    patients.down = true
    expect(await codeOf(upload())).toBe('upstream_unavailable')
    expect(states()).toEqual(['discarded'])
  })

  it("a token limited to centers must name one of them; a center not the company's is 400", async () => {
    const limited = setup({ allowedCenters: ['ALM1'] })
    expect(await problemOf(limited.upload())).toMatchObject({
      code: 'validation_failed',
      errors: [{ path: '/codalmacen', message: 'is required for a token limited to centers' }],
    })
    expect(await codeOf(limited.upload({ codalmacen: 'ALM2' }))).toBe('center_forbidden')
    expect(await codeOf(limited.upload({}, undefined, { queryCenter: 'ALM2' }))).toBe('center_forbidden')
    expect((await limited.upload({ codalmacen: 'ALM1' })).body.codalmacen).toBe('ALM1')
    expect(await codeOf(setup().upload({ codalmacen: 'ALM9' }))).toBe('unknown_center')
    expect(limited.states()).toEqual(['discarded', 'discarded', 'discarded', 'adopted'])
  })
})

describe('uploadDocument: an Idempotency-Key', () => {
  it('replays the first answer for the same fields and bytes, however they are cut; the retry keeps nothing', async () => {
    const { upload, store, content, states, lines } = setup()
    const first = await upload(
      { title: 'x' },
      { bytes: png(5000), filename: 'f.png', chunk: 100 },
      { key: 'k1' },
    )
    const again = await upload(
      { title: 'x' },
      { bytes: png(5000), filename: 'f.png', chunk: 4096 },
      { key: 'k1' },
    )
    expect(again).toEqual({ body: first.body, replayed: true })
    expect(states()).toEqual(['adopted', 'discarded'])
    expect(content.blobs.size).toBe(1)
    expect(store.events).toHaveLength(1)
    expect(lines.map((l) => l.msg)).toEqual(['document stored'])
  })

  it('409 idempotency_conflict for other bytes, another name or other fields under the same key', async () => {
    const { upload, states, store } = setup()
    await upload({ title: 'x' }, { bytes: png(), filename: 'f.png' }, { key: 'k1' })
    for (const [fields, file] of [
      [{ title: 'x' }, { bytes: png(1), filename: 'f.png' }],
      [{ title: 'x' }, { bytes: png(), filename: 'g.png' }],
      [{ title: 'x' }, { bytes: png() }],
      [{ title: 'y' }, { bytes: png(), filename: 'f.png' }],
      [{}, { bytes: png(), filename: 'f.png' }],
    ] as const)
      expect(await codeOf(upload(fields, file, { key: 'k1' }))).toBe('idempotency_conflict')
    expect(states()).toEqual(['adopted', 'discarded', 'discarded', 'discarded', 'discarded', 'discarded'])
    expect(store.events).toHaveLength(1)
  })

  it('the same key and body to another method or path is another request: 409', async () => {
    const { upload } = setup()
    await upload({}, undefined, { key: 'k1' })
    expect(await codeOf(upload({}, undefined, { key: 'k1', path: '/documents?codalmacen=ALM1' }))).toBe(
      'idempotency_conflict',
    )
    expect(await codeOf(upload({}, undefined, { key: 'k1', method: 'PUT' }))).toBe('idempotency_conflict')
  })

  it('a twin under the same key that committed first is replayed, and this upload keeps nothing', async () => {
    const { upload, store, states, content } = setup()
    const first = await upload({}, undefined, { key: 'k1' })
    // The twin was still in flight when this one looked: its answer shows up only inside idempotent.
    const storedResponse = store.storedResponse.bind(store)
    store.storedResponse = (async () => {
      store.storedResponse = storedResponse
      return null
    }) as typeof store.storedResponse
    const again = await upload({}, undefined, { key: 'k1' })
    expect(again).toEqual({ body: first.body, replayed: true })
    expect(states()).toEqual(['adopted', 'discarded'])
    expect(content.blobs.size).toBe(1)
    expect(store.events).toHaveLength(1)
  })

  it('without a key, or under another, the same upload is a second document', async () => {
    const { upload } = setup()
    const a = await upload({}, undefined, { key: 'k1' })
    const b = await upload({}, undefined, { key: 'k2' })
    const c = await upload()
    expect(new Set([a.body.id, b.body.id, c.body.id]).size).toBe(3)
  })

  it('a replay is a read: 404 when the caller no longer sees the document', async () => {
    const { upload, company, ctx, states } = setup()
    await upload({ codalmacen: 'ALM1' }, undefined, { key: 'k1' })
    const narrowed = ctxOf({ companyId: company, tokenId: ctx.auth.tokenId, allowedCenters: ['ALM2'] })
    expect(await codeOf(upload({ codalmacen: 'ALM1' }, undefined, { key: 'k1', as: narrowed }))).toBe(
      'not_found',
    )
    expect(states()).toEqual(['adopted', 'discarded'])
  })
})
