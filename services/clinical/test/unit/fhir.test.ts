import type { Bundle } from '@medplum/fhirtypes'
import { findingStatus, practitionerReference } from '../../src/domain/fhir'
import { examBundle } from '../../src/domain/fhir-bundle'
import type { Exam } from '../../src/schemas/exam'
import { expectValidBundle } from '../fhir-validator'

/** The pure mapping, where no endpoint reaches yet: superseded findings shown (a history). */

type Json = Record<string, any> // eslint-disable-line @typescript-eslint/no-explicit-any
const at = '2026-11-20T09:00:00.000Z'
const common = (id: string, state: 'live' | 'superseded') => ({
  id,
  state,
  recorded_at: at,
  recorded_by: 'test-user',
})
const exam: Exam = {
  id: '019ab2c4-1f00-7000-8000-0000000000e1',
  patient_id: '019ab2c4-1f00-7000-8000-0000000000a1',
  codalmacen: 'ALM1',
  practitioner: 'dr-ficticio',
  appointment_id: null,
  performed_at: at,
  kind: 'comprehensive',
  chief_complaint: null,
  notes: null,
  status: 'signed',
  signed_at: at,
  signed_by: 'test-user',
  amendments: 1,
  created_at: at,
  updated_at: at,
  version: 4,
  visual_acuity: [],
  iop: [
    {
      ...common('019ab2c4-1f00-7000-8000-000000000001', 'superseded'),
      eye: 'right',
      mmhg: 17.5,
      method: 'goldmann',
      measured_at: at,
      cct_um: null,
    },
    {
      ...common('019ab2c4-1f00-7000-8000-000000000002', 'live'),
      eye: 'right',
      mmhg: 15.5,
      method: 'goldmann',
      measured_at: at,
      cct_um: null,
    },
  ],
  refraction: [],
  diagnoses: [
    {
      ...common('019ab2c4-1f00-7000-8000-000000000003', 'superseded'),
      code: 'H40.1',
      system: 'icd10',
      display: null,
      eye: 'both',
      status: 'active',
      onset: null,
    },
  ],
  prescriptions: [],
}
// Signed in version 3 (4 - 1 amendment): the first IOP and the diagnosis from the draft, the second
// IOP from the amendment.
const versions = {
  addedIn: {
    '019ab2c4-1f00-7000-8000-000000000001': 2,
    '019ab2c4-1f00-7000-8000-000000000002': 4,
    '019ab2c4-1f00-7000-8000-000000000003': 2,
  },
}

describe('findingStatus', () => {
  it('is preliminary in a draft, final once signed, amended for an amendment’s, entered-in-error when superseded', () => {
    const draft = { status: 'draft' as const, version: 5, amendments: 0 }
    const signed = { status: 'signed' as const, version: 7, amendments: 2 } // signed in version 5
    expect(findingStatus(draft, { state: 'live', addedIn: 4 })).toBe('preliminary')
    expect(findingStatus(signed, { state: 'live', addedIn: 4 })).toBe('final')
    expect(findingStatus(signed, { state: 'live', addedIn: 5 })).toBe('final')
    expect(findingStatus(signed, { state: 'live', addedIn: 6 })).toBe('amended')
    expect(findingStatus(signed, { state: 'superseded', addedIn: 4 })).toBe('entered-in-error')
  })
})

/** Every bundle made here, for both validators in the last test (loading them takes seconds: once). */
const made: Bundle[] = []
const bundleOf = (...args: Parameters<typeof examBundle>): Bundle => {
  const bundle = examBundle(...args)
  made.push(bundle)
  return bundle
}

describe('examBundle', () => {
  it('leaves superseded findings out of the exam as it stands', () => {
    const bundle = bundleOf(exam, versions, new Date(at))
    expect(bundle.entry!.map((e) => e.resource!.id)).toEqual([
      exam.id,
      '019ab2c4-1f00-7000-8000-000000000002',
    ])
  })

  it('shows them entered-in-error where a bundle shows them (a Condition then has no clinical status)', () => {
    const bundle = bundleOf(exam, versions, new Date(at), { findings: 'all' })
    const byId = Object.fromEntries(bundle.entry!.map((e) => [e.resource!.id, e.resource as Json]))
    expect(byId['019ab2c4-1f00-7000-8000-000000000001']!.status).toBe('entered-in-error')
    expect(byId['019ab2c4-1f00-7000-8000-000000000002']!.status).toBe('amended')
    const condition = byId['019ab2c4-1f00-7000-8000-000000000003']!
    expect(condition.verificationStatus.coding[0].code).toBe('entered-in-error')
    expect(condition.clinicalStatus).toBeUndefined()
  })
})

describe('practitionerReference', () => {
  it('refers to a practitioner id (section 11) and names anyone else', () => {
    expect(practitionerReference('dra-lopez')).toEqual({
      reference: 'Practitioner/dra-lopez',
      type: 'Practitioner',
      display: 'dra-lopez',
    })
    expect(practitionerReference('Dra. López')).toEqual({ type: 'Practitioner', display: 'Dra. López' })
    // The whole name must be an id: one that only starts like one is a display.
    expect(practitionerReference('dra-lopez ruiz')).toEqual({
      type: 'Practitioner',
      display: 'dra-lopez ruiz',
    })
    expect(practitionerReference(`d${'r'.repeat(64)}`)).not.toHaveProperty('reference')
  })
})

describe('the bundles of this file', () => {
  it('pass both third-party validators', () => {
    if (!made.length) bundleOf(exam, versions, new Date(at), { findings: 'all' }) // run on its own
    for (const bundle of made) expectValidBundle(bundle)
  })
})
