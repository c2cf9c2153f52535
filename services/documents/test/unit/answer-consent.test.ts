import { createHash } from 'node:crypto'
import type { Principal } from '@clinic/platform/core'
import { answerConsent } from '../../src/domain/answer-consent'
import { grantInPerson } from '../../src/domain/grant-in-person'
import { requestConsent } from '../../src/domain/request-consent'
import type { Consent, GrantInput } from '../../src/schemas/consent'
import { consentWorld } from '../consent-fakes'
import { textLines } from '../pdf-tools'
import { NOW, codeOf, ctxOf, fakeId, loggingCtxOf, problemOf } from '../fakes'

const LATER = new Date(NOW.getTime() + 3_600_000)
const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex')

/** A pending consent (center ALM1, an exam of the patient's) asked an hour before it is answered. */
async function setup(o: { principal?: Partial<Principal>; guardian?: boolean } = {}) {
  const w = consentWorld()
  const names = { company: 'Clínica Ñandú', centers: { ALM1: 'Centro Gràcia' } }
  const { ctx, lines } = loggingCtxOf({ names, ...o.principal })
  const company = ctx.auth.companyId
  const patient = w.patients.add(company, {
    first_name: 'Begoña',
    last_name: 'Muñoz',
    requires_legal_guardian: !!o.guardian,
    guardian: o.guardian ? { name: 'Marta García', relationship: 'madre', email: null, phone: null } : null,
  })
  const template = w.store.addTemplate(company)
  const exam = w.exams.add(company, patient)
  const { body: consent } = await requestConsent(ctx, w.deps, {
    body: { patient_id: patient, template_key: 'cataract-surgery', codalmacen: 'ALM1', exam_id: exam },
    idempotencyKey: undefined,
    requestHash: 'h',
  })
  w.store.events.length = 0
  lines.length = 0
  w.at(LATER.toISOString())
  const grant = (body: Partial<GrantInput> = {}, input: { id?: string; queryCenter?: string } = {}) =>
    grantInPerson(ctx, w.deps, {
      id: input.id ?? consent.id,
      queryCenter: input.queryCenter,
      body: {
        signer_role: o.guardian ? 'guardian' : 'patient',
        signer_name: o.guardian ? 'Marta García' : 'Begoña Muñoz',
        witness: 'Enfermera Ficticia',
        ...body,
      },
      ip: '203.0.113.7',
      userAgent: 'Mostrador/1.0',
    })
  const make = (fields: Partial<Consent>) => w.store.seed(company, { ...consent, ...fields })
  const uploads = () => [...w.content.uploads.values()].map((u) => u.state)
  return { ...w, ctx, lines, company, patient, template, exam, consent, grant, make, uploads }
}

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

describe('answerConsent: a consent gone meanwhile, a form named in upper case', () => {
  it('409 when the consent is no longer there to lock', async () => {
    const { ctx, deps, consent, store, company, uploads } = await setup()
    const who = async () => {
      store.rows.get(company)!.delete(consent.id)
      return { patientName: 'Begoña Muñoz', signerOnFile: null }
    }
    const evidence = {
      signer_role: 'patient' as const,
      signer_name: 'B',
      method: 'in_person' as const,
      ip: null,
      user_agent: null,
    }
    expect(
      await problemOf(answerConsent(ctx, deps, consent.id, { accept: true, evidence }, { who })),
    ).toMatchObject({
      code: 'invalid_transition',
      detail: 'the consent is gone',
    })
    expect(uploads()).toEqual(['discarded'])
  })

  it('finds a scanned form whatever the case of its id', async () => {
    const { grant, documents, company, patient } = await setup()
    const scan = documents.add(company, { patient_id: patient, category: 'consent' })
    expect((await grant({ document_id: scan.id.toUpperCase() })).status).toBe('granted')
    expect(documents.locked).toEqual([scan.id])
  })
})

describe('a pending consent past its expiry (the expiry worker not yet by)', () => {
  it('cannot be granted in person, nor answered at all: 409 invalid_transition, nothing rendered or kept', async () => {
    const { grant, at, consent, store, company, uploads, ctx, deps } = await setup()
    at(consent.expires_at)
    expect(await problemOf(grant())).toMatchObject({
      status: 409,
      code: 'invalid_transition',
      detail: `the consent expired at ${consent.expires_at}`,
    })
    const who = async () => ({ patientName: 'x', signerOnFile: null })
    const evidence = {
      signer_role: 'patient' as const,
      signer_name: '',
      method: 'patient_link' as const,
      ip: null,
      user_agent: null,
    }
    expect(await codeOf(answerConsent(ctx, deps, consent.id, { accept: false, evidence }, { who }))).toBe(
      'invalid_transition',
    )
    expect(await store.findById(company, consent.id)).toEqual(consent)
    expect([uploads(), store.events]).toEqual([[], []])
  })

  it('one millisecond before its expiry, it still can', async () => {
    const { grant, at, consent } = await setup()
    at(new Date(Date.parse(consent.expires_at) - 1).toISOString())
    expect((await grant()).status).toBe('granted')
  })
})
