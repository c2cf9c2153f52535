import { NotFound, parseSearch } from '@clinic/platform/core'
import { fhirProblems } from '@clinic/platform/testing'
import { CONSENT_STATES, searchFhirConsents, toFhirConsent } from '../../src/domain/fhir-consents'
import {
  DOCUMENT_CATEGORY_SYSTEM,
  fhirBinaryContent,
  searchFhirBinaries,
  searchFhirDocumentReferences,
  toFhirBinary,
  toFhirDocumentReference,
} from '../../src/domain/fhir-documents'
import type { Consent } from '../../src/schemas/consent'
import { FakeConsentStore } from '../consent-fakes'
import { FakeDocumentStore, NOW, ctxOf, fakeId } from '../fakes'

/** The FHIR mapping and what a search asks of the store (the search itself: test/int/fhir.int.test.ts). */

const consent = (fields: Partial<Consent> = {}): Consent => ({
  id: fakeId(),
  patient_id: fakeId(),
  template_key: 'intravitreal-injection',
  language: 'en',
  template_version: 3,
  text_sha256: 'b'.repeat(64),
  signer_role: 'guardian',
  status: 'pending',
  expires_at: NOW.toISOString(),
  evidence: null,
  document_id: null,
  withdrawn_at: null,
  withdrawal_reason: null,
  appointment_id: null,
  exam_id: null,
  codalmacen: 'ALM1',
  created_at: NOW.toISOString(),
  updated_at: NOW.toISOString(),
  version: 1,
  ...fields,
})

describe('Consent', () => {
  it('maps every status of ours onto ConsentState', () => {
    expect(CONSENT_STATES).toEqual({
      pending: 'proposed',
      granted: 'active',
      refused: 'rejected',
      withdrawn: 'inactive',
      expired: 'inactive',
    })
  })

  it('names no performer for a guardian before they answer, then the guardian as typed (a RelatedPerson)', () => {
    const pending = toFhirConsent(7, consent())
    expect(fhirProblems(pending)).toEqual([])
    expect(pending.performer).toBeUndefined()
    expect(pending.dateTime).toBe(NOW.toISOString())
    const refused = toFhirConsent(
      7,
      consent({
        status: 'refused',
        evidence: {
          signer_role: 'guardian',
          signer_name: 'Tutor Ficticio',
          signed_at: '2026-11-28T09:00:00.000Z',
          method: 'patient_link',
          ip: null,
          user_agent: null,
          text_sha256: 'b'.repeat(64),
          answer: 'decline',
        },
      }),
    )
    expect(fhirProblems(refused)).toEqual([])
    expect(refused).toMatchObject({
      status: 'rejected',
      dateTime: '2026-11-28T09:00:00.000Z',
      performer: [{ type: 'RelatedPerson', display: 'Tutor Ficticio' }],
      policyRule: { text: `intravitreal-injection version 3 (en), text SHA-256 ${'b'.repeat(64)}` },
    })
    expect(refused.provision).toBeUndefined()
  })

  it('asks the store for the statuses a ConsentState names, of its system or none, within the centers', async () => {
    const store = new FakeConsentStore()
    const ctx = ctxOf({ allowedCenters: ['ALM2'] })
    const patient = fakeId()
    await searchFhirConsents(
      ctx,
      store,
      parseSearch('Consent', {
        patient: [`Patient/${patient.toUpperCase()}`, 'x'],
        status: [
          'inactive,draft,http://example.org|active',
          'http://hl7.org/fhir/consent-state-codes|proposed',
        ],
      }),
    )
    expect(store.fhirFilters).toEqual([
      { centers: ['ALM2'], patientIds: [[patient], []], statuses: [['withdrawn', 'expired'], ['pending']] },
    ])
  })
})

describe('DocumentReference and Binary', () => {
  it('maps a document without title, exam or appointment, and its bytes as Binary', () => {
    const store = new FakeDocumentStore()
    const d = store.add(1, { category: 'identity', filename: 'dni', content_type: 'image/png' })
    const ref = toFhirDocumentReference(1, d)
    expect(fhirProblems(ref)).toEqual([])
    expect(ref.category).toEqual([
      { coding: [{ system: DOCUMENT_CATEGORY_SYSTEM, code: 'identity', display: 'Identity document' }] },
    ])
    expect(ref.content[0]!.attachment).toEqual({
      contentType: 'image/png',
      url: `Binary/${d.id}`,
      size: 10,
      title: 'dni.png',
      creation: d.created_at,
    })
    expect(ref.context).toBeUndefined()
    const binary = toFhirBinary(d, Buffer.from('abc'))
    expect(fhirProblems(binary)).toEqual([])
    expect(binary.data).toBe('YWJj')
    expect(toFhirBinary(d).data).toBeUndefined()
  })

  it('asks the store for patients, known categories of our system or none, dates; Binary for held bytes only', async () => {
    const store = new FakeDocumentStore()
    const ctx = ctxOf()
    const patient = fakeId()
    await searchFhirDocumentReferences(
      ctx,
      store,
      parseSearch('DocumentReference', {
        patient: `${patient},someone`,
        category: [`imaging,http://loinc.org|referral,x-ray,${DOCUMENT_CATEGORY_SYSTEM}|report`, '|other'],
        date: 'ge2026-11',
      }),
    )
    await searchFhirBinaries(ctx, store, parseSearch('Binary', {}))
    expect(store.fhirFilters).toEqual([
      {
        centers: null,
        patientIds: [[patient]],
        categories: [['imaging', 'report'], []],
        created: [{ op: '>=', at: '2026-11-01T00:00:00.000Z' }],
        availableOnly: false,
      },
      { centers: null, patientIds: [], categories: [], created: [], availableOnly: true },
    ])
  })

  it('a Binary whose id is no UUID is no document (404, never a database error)', async () => {
    const store = new FakeDocumentStore()
    await expect(
      fhirBinaryContent(ctxOf(), { store, content: store.content }, { id: 'abc' }),
    ).rejects.toThrow(NotFound)
  })
})
