import { answerConsent } from '../../src/domain/answer-consent'
import { answerWorld as setup } from '../answer-world'
import { codeOf, problemOf } from '../fakes'

/** answerConsent at its edges: a consent gone meanwhile, a form named in upper case, the expiry. */

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
