import { createHash } from 'node:crypto'
import { SNIFF_BYTES } from '../../src/domain/detect-type'
import { dicom, pdf, png } from '../helpers'
import { partsOf } from '../fakes'
import { uploadWorld as setup } from '../upload-world'

/** uploadDocument on the fake stores: the parts as the route hands them over, as they stream. */
const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex')
/** An ISO BMFF head (HEIC, HEIF) with its major brand. */
function ftyp(brand: string) {
  const box = Buffer.concat([
    Buffer.from([0, 0, 0, 16]),
    Buffer.from(`ftyp${brand}`, 'latin1'),
    Buffer.alloc(68),
  ])
  return box
}

describe('uploadDocument: what it stores', () => {
  it('a document typed from its bytes, its content adopted, document.created, one log line', async () => {
    const { upload, store, content, company, patient, ctx, lines, states } = setup()
    const bytes = png(100)
    const { body, replayed } = await upload(
      { title: 'Retinografía', codalmacen: 'ALM2' },
      { bytes, filename: 'C:\\fotos\\fondo.pdf' },
    )
    expect(replayed).toBeUndefined()
    expect(body).toEqual({
      id: expect.any(String),
      patient_id: patient,
      category: 'imaging',
      title: 'Retinografía',
      codalmacen: 'ALM2',
      exam_id: null,
      appointment_id: null,
      // The client's name kept (its last segment), the type the bytes show.
      filename: 'fondo.pdf',
      content_type: 'image/png',
      size_bytes: bytes.length,
      sha256: sha(bytes),
      uploaded_by: ctx.auth.username,
      status: 'available',
      created_at: expect.any(String),
      updated_at: expect.any(String),
      version: 1,
    })
    expect(await store.findById(company, body.id)).toEqual(body)
    expect(content.blobs.get(`${company}:${sha(bytes)}`)?.bytes.equals(bytes)).toBe(true)
    expect(states()).toEqual(['adopted'])
    expect(store.events.map((e) => [e.type, e.subject, e.idempresa, e.codalmacen, e.actorname])).toEqual([
      ['document.created', body.id, company, 'ALM2', ctx.auth.username],
    ])
    expect(store.events[0]!.data).toEqual({
      id: body.id,
      patient_id: patient,
      category: 'imaging',
      content_type: 'image/png',
      size_bytes: bytes.length,
      sha256: sha(bytes),
      status: 'available',
      version: 1,
    })
    expect(lines.map((l) => [l.msg, l.document_id, l.size_bytes, l.replayed])).toEqual([
      ['document stored', body.id, bytes.length, false],
    ])
  })

  it('stages every byte in order, however the file arrives in pieces, and hashes them all', async () => {
    for (const chunk of [1, 7, 1000, SNIFF_BYTES, SNIFF_BYTES + 1, 100_000]) {
      const { upload, content, company } = setup()
      const bytes = pdf(3 * SNIFF_BYTES)
      const { body } = await upload({}, { bytes, chunk })
      expect([chunk, body.size_bytes, body.sha256, body.content_type]).toEqual([
        chunk,
        bytes.length,
        sha(bytes),
        'application/pdf',
      ])
      expect(content.blobs.get(`${company}:${body.sha256}`)?.bytes.equals(bytes)).toBe(true)
    }
  })

  it('a file smaller than what it sniffs is typed once all of it is in', async () => {
    const { upload } = setup()
    const { body } = await upload({}, { bytes: Buffer.from('%PDF-1.4\n%%EOF\n'), chunk: 3 })
    expect(body).toMatchObject({ content_type: 'application/pdf', size_bytes: 15 })
  })

  it.each([
    ['PDF', pdf(), 'upload.pdf'],
    [
      'JPEG',
      Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0, 0x10, 0x4a, 0x46, 0x49, 0x46, 0, 1, 1, 0, 0, 1, 0, 1, 0, 0]),
      'upload.jpg',
    ],
    ['PNG', png(), 'upload.png'],
    ['TIFF', Buffer.concat([Buffer.from('II*\0\x08\0\0\0', 'latin1'), Buffer.alloc(64)]), 'upload.tif'],
    ['WebP', Buffer.concat([Buffer.from('RIFF$\0\0\0WEBPVP8 ', 'latin1'), Buffer.alloc(64)]), 'upload.webp'],
    ['HEIC', ftyp('heic'), 'upload.heic'],
    ['HEIF', ftyp('mif1'), 'upload.heic'],
    ['DICOM', dicom(), 'upload.dcm'],
  ])('a %s without a name is upload.<its extension>', async (_, bytes, named) => {
    const { upload } = setup()
    expect((await upload({}, { bytes })).body.filename).toBe(named)
  })

  it('names a file without a usable name upload.<the extension of its type>', async () => {
    const { upload } = setup()
    for (const [filename, bytes, named] of [
      [undefined, png(), 'upload.png'],
      ['../..', pdf(), 'upload.pdf'],
      ['\u202e', png(), 'upload.png'],
    ] as const)
      expect((await upload({}, { bytes, filename })).body.filename).toBe(named)
  })

  it('takes the fields after the file too; lower-cases ids; the query center when the body names none', async () => {
    const { send, patient, appointments, exams, company, patients } = setup()
    const exam = exams.add(company, patient)
    const appointment = appointments.add(company, patient)
    const { body } = await send(
      partsOf(
        {},
        { bytes: png() },
        {
          patient_id: patient.toUpperCase(),
          category: 'report',
          exam_id: exam.toUpperCase(),
          appointment_id: appointment.toUpperCase(),
        },
      ),
      { queryCenter: 'ALM1' },
    )
    expect(body).toMatchObject({
      patient_id: patient,
      exam_id: exam,
      appointment_id: appointment,
      codalmacen: 'ALM1',
    })
    expect(patients.asked).toEqual([patient])
    expect([exams.asked, appointments.asked]).toEqual([[exam], [appointment]])
  })

  it('a center in the body wins over the query; none at all is a document of no center', async () => {
    const { upload } = setup()
    expect((await upload({ codalmacen: 'ALM2' }, undefined, { queryCenter: 'ALM1' })).body.codalmacen).toBe(
      'ALM2',
    )
    expect((await upload()).body.codalmacen).toBeNull()
  })

  it('shares the bytes of an identical content of the company: the second upload is dropped, both documents hold it', async () => {
    const { upload, content, company, states } = setup()
    const first = await upload()
    const second = await upload()
    expect(second.body.id).not.toBe(first.body.id)
    expect(second.body.sha256).toBe(first.body.sha256)
    expect(states()).toEqual(['adopted', 'dropped'])
    expect(content.blobs.size).toBe(1)
    expect(content.blobs.get(`${company}:${first.body.sha256}`)?.uploadId).toBe('upload-1')
  })
})
