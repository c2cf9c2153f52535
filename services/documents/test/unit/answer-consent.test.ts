import { createHash } from 'node:crypto'
import { answerConsent } from '../../src/domain/answer-consent'
import { grantInPerson } from '../../src/domain/grant-in-person'
import { LATER, answerWorld as setup } from '../answer-world'
import { codeOf, ctxOf, fakeId, problemOf } from '../fakes'
import { textLines } from '../pdf-tools'

const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex')

describe('grantInPerson', () => {
  it('grants with its evidence, renders the signed PDF and keeps it as a consent document, in one go', async () => {
    const { grant, store, documents, content, company, consent, patient, exam, ctx, lines, uploads } =
      await setup()
    const granted = await grant({ signer_name: 'begoña muñoz lópez' })
    expect(granted).toMatchObject({ status: 'granted', version: 2, document_id: expect.any(String) })
    expect(granted.evidence).toEqual({
      signer_role: 'patient',
      signer_name: 'begoña muñoz lópez',
      signer_name_on_file: 'Begoña Muñoz',
      signer_name_matches: true,
      method: 'in_person',
      witness: 'Enfermera Ficticia',
      ip: '203.0.113.7',
      user_agent: 'Mostrador/1.0',
      signed_at: LATER.toISOString(),
      text_sha256: consent.text_sha256,
      answer: 'accept',
    })
    const doc = (await documents.findById(company, granted.document_id!))!
    const bytes = content.blobs.get(`${company}:${doc.sha256}`)!.bytes
    expect(bytes.subarray(0, 5).toString()).toBe('%PDF-')
    expect(doc).toMatchObject({
      patient_id: patient,
      category: 'consent',
      title: 'Consent cataract-surgery v1',
      codalmacen: 'ALM1',
      exam_id: exam,
      appointment_id: null,
      filename: 'consent-cataract-surgery-v1.pdf',
      content_type: 'application/pdf',
      size_bytes: bytes.length,
      sha256: sha(bytes),
      uploaded_by: ctx.auth.username,
      status: 'available',
    })
    expect(uploads()).toEqual(['adopted'])
    expect(store.locked).toEqual([consent.id])
    // The PDF holds what was signed, for whom, by whom, from whom (pdftotext reads it back).
    const text = textLines(bytes).map((l) => l.text)
    expect(text).toEqual(
      expect.arrayContaining([
        'Clínica Ñandú',
        'Centro Gràcia',
        'Cirugía de cataratas',
        'Se me ha explicado la cirugía.',
        'Autorizo la intervención.',
        'Firmante: begoña muñoz lópez (en su propio nombre)',
        `Paciente: Begoña Muñoz (${patient})`,
        'Testigo: Enfermera Ficticia',
      ]),
    )
    // Both events in the consent's transaction (one outbox): the document first.
    expect(store.events.map((e) => [e.type, e.subject])).toEqual([
      ['document.created', doc.id],
      ['consent.granted', consent.id],
    ])
    expect(store.events[1]!.data).toMatchObject({
      status: 'granted',
      method: 'in_person',
      document_id: doc.id,
    })
    expect(documents.events).toEqual([])
    expect(lines.map((l) => [l.msg, l.consent_id, l.status])).toEqual([
      ['consent answered', consent.id, 'granted'],
    ])
  })

  it('keeps a name that is not the one on file, beside it: staff see the mismatch', async () => {
    const { grant } = await setup({ guardian: true })
    const granted = await grant({ signer_name: 'Pepe Desconocido' })
    expect(granted.evidence).toMatchObject({
      signer_role: 'guardian',
      signer_name: 'Pepe Desconocido',
      signer_name_on_file: 'Marta García',
      signer_name_matches: false,
    })
  })

  it('no name to compare with when the patient is no longer on file', async () => {
    const { grant, patients, company, patient } = await setup()
    patients.entries.delete(`${company}:${patient}`)
    expect((await grant()).evidence).toMatchObject({ signer_name_on_file: null, signer_name_matches: null })
  })

  it("422 signer_mismatch for another role than the consent's: it stays pending, nothing rendered or kept", async () => {
    const { grant, store, company, consent, uploads } = await setup({ guardian: true })
    expect(await problemOf(grant({ signer_role: 'patient' }))).toMatchObject({
      status: 422,
      code: 'signer_mismatch',
      detail: 'this consent is signed by its guardian, not by the patient',
    })
    expect(await store.findById(company, consent.id)).toEqual(consent)
    expect([uploads(), store.events]).toEqual([[], []])
  })

  it.each(['granted', 'refused', 'withdrawn', 'expired'] as const)(
    '409 invalid_transition for a %s consent',
    async (status) => {
      const { grant, make, uploads, store } = await setup()
      make({ status })
      expect(await problemOf(grant())).toMatchObject({
        status: 409,
        code: 'invalid_transition',
        detail: `the consent is ${status}`,
      })
      expect([uploads(), store.events]).toEqual([[], []])
    },
  )

  it("404 for another company's consent, or one of a center the caller may not see", async () => {
    const { grant, deps, consent } = await setup()
    const other = grantInPerson(ctxOf(), deps, {
      id: consent.id,
      body: { signer_role: 'patient', signer_name: 'x', witness: 'y' },
      ip: null,
      userAgent: null,
    })
    expect(await codeOf(other)).toBe('not_found')
    expect(await codeOf(grant({}, { queryCenter: 'ALM2' }))).toBe('not_found')
  })
})

describe('grantInPerson with a scanned form', () => {
  it('attaches an available consent document of the patient instead of rendering one', async () => {
    const { grant, documents, company, patient, store, uploads } = await setup()
    const scan = documents.add(company, { patient_id: patient, category: 'consent' })
    const granted = await grant({ document_id: scan.id })
    expect(granted).toMatchObject({ status: 'granted', document_id: scan.id })
    expect(documents.locked).toContain(scan.id)
    expect([uploads(), documents.events]).toEqual([[], []])
    expect(store.events.map((e) => e.type)).toEqual(['consent.granted'])
  })

  it("400 naming /document_id for anything else: another patient's, not a consent, deleted, unknown", async () => {
    const { grant, documents, company, patient, consent, store } = await setup()
    for (const doc of [
      documents.add(company, { patient_id: fakeId(), category: 'consent' }),
      documents.add(company, { patient_id: patient, category: 'report' }),
      documents.add(company, { patient_id: patient, category: 'consent', status: 'deleted' }),
      { id: fakeId() },
    ])
      expect(await problemOf(grant({ document_id: doc.id }))).toMatchObject({
        status: 400,
        code: 'validation_failed',
        errors: [
          {
            path: '/document_id',
            message: "must be an available document of category consent of the consent's patient",
          },
        ],
      })
    expect(await store.findById(company, consent.id)).toEqual(consent)
    expect(store.events).toEqual([])
  })
})

describe('answerConsent', () => {
  const decline = {
    signer_role: 'patient' as const,
    signer_name: '',
    method: 'patient_link' as const,
    ip: null,
    user_agent: null,
  }

  it('a refusal is kept with its evidence, without a PDF or document; consent.refused', async () => {
    const { ctx, deps, consent, store, documents, uploads } = await setup()
    const who = async () => ({ patientName: 'Begoña Muñoz', signerOnFile: 'Begoña Muñoz' })
    const refused = await answerConsent(ctx, deps, consent.id, { accept: false, evidence: decline }, { who })
    expect(refused).toMatchObject({ status: 'refused', document_id: null })
    expect(refused.evidence).toEqual({
      ...decline,
      // No name typed: none compared.
      signer_name_on_file: 'Begoña Muñoz',
      signer_name_matches: null,
      signed_at: LATER.toISOString(),
      text_sha256: consent.text_sha256,
      answer: 'decline',
    })
    expect(store.events.map((e) => [e.type, (e.data as { status: string }).status])).toEqual([
      ['consent.refused', 'refused'],
    ])
    expect([uploads(), documents.events]).toEqual([[], []])
  })

  it('the first answer wins: one that finds the consent answered meanwhile is 409 and its PDF is discarded', async () => {
    const { ctx, deps, consent, make, store, uploads } = await setup()
    const evidence = { ...decline, signer_name: 'Begoña Muñoz' }
    const who = async () => {
      // Another answer commits while this one renders its PDF.
      make({ status: 'refused' })
      return { patientName: 'Begoña Muñoz', signerOnFile: 'Begoña Muñoz' }
    }
    expect(
      await problemOf(answerConsent(ctx, deps, consent.id, { accept: true, evidence }, { who })),
    ).toMatchObject({
      code: 'invalid_transition',
      detail: 'the consent is refused',
    })
    expect(uploads()).toEqual(['discarded'])
    expect(store.events).toEqual([])
  })
})
