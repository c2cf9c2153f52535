import { answerConsentLink } from '../../src/domain/answer-consent-link'
import { PDF_LINK_SECONDS } from '../../src/domain/link-kinds'
import { linkWorld, pdfClaims } from '../link-world'

/** POST /p/c/<token>: Accept (with the name as typed) or Decline, once. */

async function setup(o: { guardian?: boolean } = {}) {
  const w = await linkWorld(o)
  const answer = async (form: { answer?: unknown; name?: unknown }, token?: string) =>
    answerConsentLink(w.deps, {
      ...(await w.request(token)),
      answer: form.answer,
      name: form.name,
      ip: '203.0.113.7',
      userAgent: 'TestPhone/1.0',
    })
  const stored = async () => (await w.store.findById(w.company, w.consent.id))!
  return { ...w, answer, stored }
}

describe('answerConsentLink: accept', () => {
  it('grants with the evidence of the link, and offers the signed PDF for 24 hours', async () => {
    const { answer, stored, consent, company, at, time } = await setup({ guardian: true })
    at(60_000)
    const page = await answer({ answer: 'accept', name: '  Marta   García\tLópez ' })
    const granted = await stored()
    expect(granted).toMatchObject({ status: 'granted', document_id: expect.any(String) })
    expect(granted.evidence).toEqual({
      signer_role: 'guardian',
      signer_name: 'Marta García López',
      signer_name_on_file: 'Marta García',
      signer_name_matches: true,
      method: 'patient_link',
      ip: '203.0.113.7',
      user_agent: 'TestPhone/1.0',
      signed_at: '2026-11-27T10:01:00.000Z',
      text_sha256: consent.text_sha256,
      answer: 'accept',
    })
    expect(page).toEqual({
      kind: 'done',
      status: 'granted',
      title: 'Cirugía de cataratas',
      signerRole: 'guardian',
      patientName: 'Begoña Muñoz',
      signerName: 'Marta García López',
      answeredAt: '2026-11-27T10:01:00.000Z',
      clinic: { name: 'Clínica Ñandú', center: 'Centro Gràcia', timeZone: 'Europe/Madrid' },
      pdfUrl: expect.stringMatching(/^\/p\/c\/pdf\/[\w-]+\.[\w-]+\.[\w-]+$/),
    })
    const answeredAt = Date.parse('2026-11-27T10:01:00.000Z') / 1000
    expect(await pdfClaims((page as { pdfUrl: string }).pdfUrl, time.now)).toMatchObject({
      companyId: company,
      consentId: consent.id,
      documentId: granted.document_id,
      exp: answeredAt + PDF_LINK_SECONDS,
    })
    expect(PDF_LINK_SECONDS).toBe(86_400)
  })

  it('keeps a user agent of at most 500 characters, and no address or browser when none came', async () => {
    const w = await setup()
    await answerConsentLink(w.deps, {
      ...(await w.request()),
      answer: 'accept',
      name: 'Begoña Muñoz',
      ip: null,
      userAgent: 'x'.repeat(600),
    })
    expect((await w.stored()).evidence).toMatchObject({ ip: null, user_agent: 'x'.repeat(500) })
    const other = await setup()
    await answerConsentLink(other.deps, {
      ...(await other.request()),
      answer: 'decline',
      name: '',
      ip: null,
      userAgent: null,
    })
    expect((await other.stored()).evidence).toMatchObject({ ip: null, user_agent: null })
  })

  it.each([
    ['no name', undefined],
    ['a name that is not text', 42],
    ['an empty name', ''],
    ['only spaces', '   \t '],
    ['two characters', 'Al'],
    ['a name of 201 characters', 'M'.repeat(201)],
    ['a control character', 'Marta\u0007García'],
    ['DEL', 'Marta\u007fGarcía'],
    ['a C1 control (CSI)', 'Marta\u009bGarcía'],
    ['a C1 control (NEL)', 'Marta\u0085García'],
    ['the last C1 control', 'Marta\u009fGarcía'],
    ['a unit separator', 'Marta\u001fGarcía'],
  ])('asks again for the full name: %s (the consent stays pending)', async (_, name) => {
    const { answer, stored, consent, template } = await setup()
    expect(await answer({ answer: 'accept', name })).toEqual({
      kind: 'name_required',
      template,
      signerRole: 'patient',
      patientName: 'Begoña Muñoz',
      signerName: 'Begoña Muñoz',
      clinic: { name: 'Clínica Ñandú', center: 'Centro Gràcia', timeZone: 'Europe/Madrid' },
    })
    expect(await stored()).toEqual(consent)
  })

  it('takes a name of 3 and of 200 characters, any letter past the C1 controls', async () => {
    for (const name of ['Ana', 'M'.repeat(200), 'Ñ ¡ ÿ', 'Ærø ~x']) {
      const { answer, stored } = await setup()
      expect((await answer({ answer: 'accept', name })).kind).toBe('done')
      expect((await stored()).evidence?.signer_name).toBe(name)
    }
  })
})

describe('answerConsentLink: decline, and what is not an answer', () => {
  it('a decline needs no name and offers no PDF; the refusal is kept', async () => {
    const { answer, stored } = await setup()
    expect(await answer({ answer: 'decline' })).toMatchObject({
      kind: 'done',
      status: 'refused',
      signerName: '',
      pdfUrl: null,
    })
    expect(await stored()).toMatchObject({
      status: 'refused',
      document_id: null,
      evidence: { answer: 'decline', signer_name: '', signer_name_matches: null, method: 'patient_link' },
    })
  })

  it('a decline keeps a name typed (any length up to 200), and none with a control character or longer', async () => {
    const typed = async (name: unknown) => {
      const { answer, stored } = await setup()
      const page = await answer({ answer: 'decline', name })
      return [page.kind === 'done' && page.signerName, (await stored()).evidence?.signer_name]
    }
    expect(await typed('  Begoña   Muñoz ')).toEqual(['Begoña Muñoz', 'Begoña Muñoz'])
    expect(await typed('Al')).toEqual(['Al', 'Al'])
    for (const name of ['Marta\u0007García', 'Marta\u009bGarcía', 'M'.repeat(201), 42])
      expect([name, await typed(name)]).toEqual([name, ['', '']])
  })

  it('invalid for an answer that is neither accept nor decline; nothing changes', async () => {
    const { answer, stored, consent } = await setup()
    for (const a of [undefined, 'yes', 'ACCEPT', ['accept']])
      expect(await answer({ answer: a, name: 'Begoña Muñoz' })).toEqual({ kind: 'invalid' })
    expect(await stored()).toEqual(consent)
  })

  it('the page says why not for a bad or expired link, or a consent answered already', async () => {
    const { answer, token, make, at, consent } = await setup()
    expect(await answer({ answer: 'accept', name: 'x' }, `${await token()}x`)).toEqual({ kind: 'invalid' })
    make({ status: 'refused' })
    expect(await answer({ answer: 'accept', name: 'Begoña Muñoz' })).toEqual({
      kind: 'used',
      status: 'refused',
    })
    at(consent.expires_at)
    expect(await answer({ answer: 'decline' })).toEqual({ kind: 'expired' })
  })
})

describe('answerConsentLink: a second submit meanwhile', () => {
  it('shows what the first answer was', async () => {
    const { answer, patients, make, stored } = await setup()
    // The page is read, then another submit commits before this one's answer.
    const find = patients.find.bind(patients)
    patients.find = async (ctx, id) => {
      const found = await find(ctx, id)
      make({ status: 'granted' })
      return found
    }
    expect(await answer({ answer: 'decline' })).toEqual({ kind: 'used', status: 'granted' })
    expect((await stored()).status).toBe('granted')
  })
})

describe('answerConsentLink: the consent expiring while the answer is on its way', () => {
  it('says expired, and the consent is not granted', async () => {
    const { answer, patients, at, consent, stored, content } = await setup()
    // The page is read just before the expiry; the grant comes after it.
    const find = patients.find.bind(patients)
    patients.find = async (ctx, id) => {
      const found = await find(ctx, id)
      at(consent.expires_at)
      return found
    }
    expect(await answer({ answer: 'accept', name: 'Begoña Muñoz' })).toEqual({ kind: 'expired' })
    expect(await stored()).toEqual(consent)
    expect(content.uploads.size).toBe(0)
  })
})
