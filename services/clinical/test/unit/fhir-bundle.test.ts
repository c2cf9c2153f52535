import type { Bundle } from '@medplum/fhirtypes'
import { findingStatus, type FindingVersions } from '../../src/domain/fhir'
import { examBundle } from '../../src/domain/fhir-bundle'
import type { Exam, Prescription } from '../../src/schemas/exam'
import { expectValidBundle } from '../fhir-validator'
import { alsoUsed, eyeSite, fromValueSet } from '../value-sets'

/**
 * The exam as a FHIR R4 Bundle, resource by resource (DESIGN 14.4 and docs/DESIGN.md "FHIR, as
 * built"): every element the mapping writes, the codes taken from the value-set fixture (never from
 * src/), statuses through draft, signature and amendment. The bundles made here go through both
 * validators in the last test of the file (loading them takes seconds, so once).
 */

type Json = Record<string, any> // eslint-disable-line @typescript-eslint/no-explicit-any
const made: Bundle[] = []
const bundleOf = (...args: Parameters<typeof examBundle>): Json => {
  const bundle = examBundle(...args)
  made.push(bundle)
  return bundle as Json
}
const resources = (bundle: Json): Record<string, Json> =>
  Object.fromEntries(bundle.entry.map((e: Json) => [e.resource.id, e.resource]))

const UCUM = 'http://unitsofmeasure.org'
const PERFORMED = '2026-11-20T09:00:00.000Z'
const RECORDED = '2026-11-20T09:05:00.000Z'
const NOW = new Date('2026-11-21T12:00:00.000Z')
const id = (n: number) => `019ab2c4-1f00-7000-8000-${n.toString().padStart(12, '0')}`
const EXAM = id(900)
const PATIENT = id(901)
const common = <E extends string>(n: number, eye: E, state: 'live' | 'superseded' = 'live') => ({
  id: id(n),
  eye,
  state,
  recorded_at: RECORDED,
  recorded_by: 'test-user',
})

/** Signed in version 4 (version 5, one amendment): findings added in 2-4 are final, in 5 amended. */
function signedExam(over: Partial<Exam> = {}): Exam {
  return {
    id: EXAM,
    patient_id: PATIENT,
    codalmacen: 'ALM1',
    practitioner: 'dra-lopez',
    appointment_id: null,
    performed_at: PERFORMED,
    kind: 'follow_up',
    chief_complaint: 'control de presion',
    notes: 'nota ficticia',
    status: 'signed',
    signed_at: PERFORMED,
    signed_by: 'test-user',
    amendments: 1,
    created_at: PERFORMED,
    updated_at: PERFORMED,
    version: 5,
    visual_acuity: [
      {
        ...common(1, 'right'),
        kind: 'best_corrected',
        value: '6/9',
        notation: 'snellen_m',
        distance_m: 6,
        chart: null,
        logmar: 0.18,
      },
      {
        ...common(2, 'left'),
        kind: 'uncorrected',
        value: 'LP',
        notation: 'qualitative',
        distance_m: 6,
        chart: null,
        logmar: null,
      },
      {
        ...common(3, 'both'),
        kind: 'near',
        value: '0.5',
        notation: 'decimal',
        distance_m: 0.4,
        chart: null,
        logmar: 0.3,
      },
      {
        ...common(4, 'right', 'superseded'),
        kind: 'habitual',
        value: '6/12',
        notation: 'snellen_m',
        distance_m: 6,
        chart: null,
        logmar: 0.3,
      },
    ],
    iop: [
      {
        ...common(10, 'left'),
        mmhg: 21.5,
        method: 'icare',
        measured_at: '2026-11-20T08:10:00.000Z',
        cct_um: 540,
      },
      {
        ...common(11, 'right'),
        mmhg: 15,
        method: 'goldmann',
        measured_at: '2026-11-20T08:20:00.000Z',
        cct_um: null,
      },
    ],
    refraction: [
      {
        ...common(20, 'right'),
        kind: 'manifest',
        sphere: -1.5,
        cylinder: -0.5,
        axis: 90,
        add: 2,
        prism: { amount: 1.5, base: 'in' },
      },
      {
        ...common(21, 'left'),
        kind: 'cycloplegic',
        sphere: 1.25,
        cylinder: 0,
        axis: null,
        add: null,
        prism: null,
      },
    ],
    diagnoses: [
      {
        ...common(30, 'right'),
        code: 'H40.11',
        system: 'icd10cm',
        display: 'glaucoma ficticio',
        status: 'suspected',
        onset: '2026-01-01',
      },
      {
        ...common(31, 'both'),
        code: 'H40.1',
        system: 'icd10',
        display: null,
        status: 'resolved',
        onset: null,
      },
      {
        ...common(32, 'not_applicable'),
        code: '23986001',
        system: 'snomed',
        display: null,
        status: 'active',
        onset: null,
      },
      {
        ...common(33, 'left'),
        code: 'H40.11',
        system: 'icd10cm',
        system_as_entered: 'icd10',
        display: null,
        status: 'active',
        onset: null,
      } as Exam['diagnoses'][number],
      {
        ...common(34, 'left', 'superseded'),
        code: 'H40',
        system: 'icd10',
        display: null,
        status: 'active',
        onset: null,
      },
    ],
    prescriptions: [prescription(40, 'spectacles'), prescription(41, 'contact_lenses')],
    ...over,
  }
}
function prescription(n: number, type: Prescription['type']): Prescription {
  return {
    id: id(n),
    exam_id: EXAM,
    patient_id: PATIENT,
    codalmacen: 'ALM1',
    type,
    lenses: [
      {
        eye: 'right',
        sphere: -1,
        cylinder: -0.5,
        axis: 80,
        add: 1.5,
        prism: null,
        base_curve_mm: null,
        diameter_mm: null,
        brand: null,
      },
      {
        eye: 'left',
        sphere: -1.25,
        cylinder: 0,
        axis: null,
        add: null,
        prism: { amount: 1, base: 'out' },
        base_curve_mm: 8.6,
        diameter_mm: 14.2,
        brand: 'Marca',
      },
    ],
    valid_until: '2028-11-20',
    notes: null,
    issued_at: '2026-11-20T10:00:00.000Z',
    issued_by: 'test-user',
    version: 1,
  }
}
const ADDED_IN: FindingVersions = {
  addedIn: {
    [id(1)]: 2,
    [id(2)]: 5,
    [id(3)]: 4,
    [id(4)]: 2,
    [id(10)]: 3,
    [id(11)]: 5,
    [id(20)]: 3,
    [id(21)]: 3,
    [id(30)]: 2,
    [id(31)]: 5,
    [id(32)]: 2,
    [id(33)]: 2,
    [id(34)]: 2,
  },
}

const DRA_LOPEZ = { reference: 'Practitioner/dra-lopez', type: 'Practitioner', display: 'dra-lopez' }
const observation = (n: number, status: string) => ({
  resourceType: 'Observation',
  id: id(n),
  status,
  category: [
    {
      coding: [
        {
          system: 'http://terminology.hl7.org/CodeSystem/observation-category',
          code: 'exam',
          display: 'Exam',
        },
      ],
    },
  ],
  subject: { reference: `Patient/${PATIENT}` },
  encounter: { reference: `urn:uuid:${EXAM}` },
  effectiveDateTime: PERFORMED,
  performer: [DRA_LOPEZ],
})
const condition = (n: number) => ({
  resourceType: 'Condition',
  id: id(n),
  subject: { reference: `Patient/${PATIENT}` },
  encounter: { reference: `urn:uuid:${EXAM}` },
  recordedDate: RECORDED,
})
const clinical = (code: string) => ({
  coding: [{ system: 'http://terminology.hl7.org/CodeSystem/condition-clinical', code }],
})
const verification = (code: string) => ({
  coding: [{ system: 'http://terminology.hl7.org/CodeSystem/condition-ver-status', code }],
})
const site = (eye: string) => ({ coding: [eyeSite(eye)] })
const diop = (value: number) => ({ value, unit: 'dioptre', system: UCUM, code: '[diop]' })
const refractionCode = (code: string) => ({ coding: [fromValueSet('RefractionObservationCodes', code)] })

describe('examBundle: the Bundle', () => {
  it('is a collection stamped now, an entry per resource by urn:uuid, in a fixed order; superseded left out', () => {
    const bundle = bundleOf(signedExam(), ADDED_IN, NOW)
    expect(bundle).toMatchObject({
      resourceType: 'Bundle',
      id: EXAM,
      type: 'collection',
      timestamp: NOW.toISOString(),
    })
    expect(bundle.entry.map((e: Json) => [e.fullUrl, e.resource.resourceType])).toEqual([
      [`urn:uuid:${EXAM}`, 'Encounter'],
      ...[1, 2, 3, 10, 11, 20, 21].map((n) => [`urn:uuid:${id(n)}`, 'Observation']),
      ...[30, 31, 32, 33].map((n) => [`urn:uuid:${id(n)}`, 'Condition']),
      ...[40, 41].map((n) => [`urn:uuid:${id(n)}`, 'VisionPrescription']),
    ])
  })

  it('shows superseded findings entered-in-error only when asked for all of them', () => {
    const all = resources(bundleOf(signedExam(), ADDED_IN, NOW, { findings: 'all' }))
    expect(all[id(4)]!.status).toBe('entered-in-error')
    expect(all[id(34)]!.verificationStatus).toEqual(verification('entered-in-error'))
    expect(all[id(34)]!.clinicalStatus).toBeUndefined()
    expect(Object.keys(all)).toHaveLength(16)
    const live = resources(bundleOf(signedExam(), ADDED_IN, NOW, { findings: 'live' }))
    expect(Object.keys(live)).toHaveLength(14)
  })
})

describe('examBundle: the Encounter', () => {
  it('is the visit: finished once signed, ambulatory, the kind, the practitioner, the time and the complaint', () => {
    expect(resources(bundleOf(signedExam(), ADDED_IN, NOW))[EXAM]).toEqual({
      resourceType: 'Encounter',
      id: EXAM,
      status: 'finished',
      class: {
        system: 'http://terminology.hl7.org/CodeSystem/v3-ActCode',
        code: 'AMB',
        display: 'ambulatory',
      },
      type: [{ text: 'follow_up' }],
      subject: { reference: `Patient/${PATIENT}` },
      participant: [{ individual: DRA_LOPEZ }],
      period: { start: PERFORMED },
      reasonCode: [{ text: 'control de presion' }],
    })
  })

  it('is in-progress while a draft, and has no reason without a complaint', () => {
    const draft = resources(bundleOf(signedExam({ status: 'draft', chief_complaint: null }), ADDED_IN, NOW))
    expect(draft[EXAM]!.status).toBe('in-progress')
    expect(draft[EXAM]).not.toHaveProperty('reasonCode')
  })
})

describe('examBundle: Observations', () => {
  it('acuity: its kind’s code, logMAR as the value, the entry as entered; LP has no logMAR, its grade is the value', () => {
    const r = resources(bundleOf(signedExam(), ADDED_IN, NOW))
    expect(r[id(1)]).toEqual({
      ...observation(1, 'final'),
      code: { coding: [alsoUsed('419775003')], text: 'visual acuity (best_corrected)' },
      bodySite: site('right'),
      valueQuantity: { value: 0.18, unit: 'logMAR', system: UCUM, code: '{logMAR}' },
      component: [{ code: { text: 'as entered (snellen_m)' }, valueString: '6/9' }],
    })
    expect(r[id(2)]).toEqual({
      ...observation(2, 'amended'),
      code: {
        coding: [fromValueSet('VisualAcuityOrganizerCodes', '420050001')],
        text: 'visual acuity (uncorrected)',
      },
      bodySite: site('left'),
      valueCodeableConcept: { text: 'LP' },
      component: [{ code: { text: 'as entered (qualitative)' }, valueString: 'LP' }],
    })
    expect(r[id(3)]).toMatchObject({
      status: 'final',
      code: {
        coding: [fromValueSet('VisualAcuityObservationCodes', '251743004')],
        text: 'visual acuity (near)',
      },
      bodySite: site('both'),
      valueQuantity: { value: 0.3 },
    })
  })

  it('acuity: habitual is distance acuity, pinhole its own code, NLP no logMAR either', () => {
    const exam = signedExam({
      visual_acuity: [
        {
          ...common(5, 'right'),
          kind: 'habitual',
          value: '6/12',
          notation: 'snellen_m',
          distance_m: 6,
          chart: null,
          logmar: 0.3,
        },
        {
          ...common(6, 'left'),
          kind: 'pinhole',
          value: '6/6',
          notation: 'snellen_m',
          distance_m: 6,
          chart: null,
          logmar: 0,
        },
        {
          ...common(7, 'left'),
          kind: 'uncorrected',
          value: 'NLP',
          notation: 'qualitative',
          distance_m: 6,
          chart: null,
          logmar: null,
        },
      ],
    })
    const r = resources(bundleOf(exam, ADDED_IN, NOW))
    expect(r[id(5)]!.code).toEqual({
      coding: [fromValueSet('VisualAcuityObservationCodes', '251739003')],
      text: 'visual acuity (habitual)',
    })
    expect(r[id(6)]!.code.coding).toEqual([fromValueSet('VisualAcuityObservationCodes', '419475002')])
    expect(r[id(6)]!.valueQuantity.value).toBe(0)
    expect(r[id(7)]).toMatchObject({ valueCodeableConcept: { text: 'NLP' } })
    expect(r[id(7)]).not.toHaveProperty('valueQuantity')
  })

  it('IOP: LOINC, mm[Hg], the time it was measured, the tonometer coded, the corneal thickness when there is one', () => {
    const r = resources(bundleOf(signedExam(), ADDED_IN, NOW))
    expect(r[id(10)]).toEqual({
      ...observation(10, 'final'),
      code: { coding: [alsoUsed('56844-4')] },
      bodySite: site('left'),
      effectiveDateTime: '2026-11-20T08:10:00.000Z',
      valueQuantity: { value: 21.5, unit: 'mmHg', system: UCUM, code: 'mm[Hg]' },
      method: {
        coding: [{ system: 'https://clinic.example/fhir/CodeSystem/iop-method', code: 'icare' }],
        text: 'icare',
      },
      component: [
        {
          code: { text: 'central corneal thickness' },
          valueQuantity: { value: 540, unit: 'µm', system: UCUM, code: 'um' },
        },
      ],
    })
    expect(r[id(11)]).toMatchObject({
      status: 'amended',
      bodySite: site('right'),
      valueQuantity: { value: 15 },
    })
    expect(r[id(11)]).not.toHaveProperty('component')
  })

  it('refraction: sphere, cylinder and axis, add, and the prism’s amount and base; a sphere alone is one component', () => {
    const r = resources(bundleOf(signedExam(), ADDED_IN, NOW))
    expect(r[id(20)]).toEqual({
      ...observation(20, 'final'),
      code: { coding: [alsoUsed('251794006')] },
      bodySite: site('right'),
      method: {
        coding: [{ system: 'https://clinic.example/fhir/CodeSystem/refraction-kind', code: 'manifest' }],
        text: 'manifest',
      },
      component: [
        { code: refractionCode('251795007'), valueQuantity: diop(-1.5) },
        { code: refractionCode('251797004'), valueQuantity: diop(-0.5) },
        {
          code: refractionCode('251799001'),
          valueQuantity: { value: 90, unit: 'degree', system: UCUM, code: 'deg' },
        },
        { code: refractionCode('397282003'), valueQuantity: diop(2) },
        {
          code: { text: 'prism amount' },
          valueQuantity: { value: 1.5, unit: 'prism dioptre', system: UCUM, code: "[p'diop]" },
        },
        {
          code: refractionCode('246223004'),
          valueCodeableConcept: {
            coding: [{ system: 'http://hl7.org/fhir/vision-base-codes', code: 'in' }],
            text: 'in',
          },
        },
      ],
    })
    expect(r[id(21)]).toMatchObject({ bodySite: site('left'), method: { text: 'cycloplegic' } })
    expect(r[id(21)]!.component).toEqual([{ code: refractionCode('251795007'), valueQuantity: diop(1.25) }])
  })

  it('are preliminary in a draft, whatever version added them', () => {
    const r = resources(bundleOf(signedExam({ status: 'draft', amendments: 0 }), ADDED_IN, NOW))
    for (const n of [1, 2, 3, 10, 11, 20, 21]) expect(r[id(n)]!.status).toBe('preliminary')
  })

  it('name a practitioner who is not a practitioner id by display only', () => {
    const r = resources(bundleOf(signedExam({ practitioner: 'Dra. López' }), ADDED_IN, NOW))
    expect(r[id(10)]!.performer).toEqual([{ type: 'Practitioner', display: 'Dra. López' }])
    expect(r[id(40)]!.prescriber).toEqual({ type: 'Practitioner', display: 'Dra. López' })
  })
})

describe('examBundle: Conditions', () => {
  it('suspected is provisional, active and resolved confirmed; each system its URI; the eye a list; onset when known', () => {
    const r = resources(bundleOf(signedExam(), ADDED_IN, NOW))
    expect(r[id(30)]).toEqual({
      ...condition(30),
      clinicalStatus: clinical('active'),
      verificationStatus: verification('provisional'),
      code: {
        coding: [
          { system: 'http://hl7.org/fhir/sid/icd-10-cm', code: 'H40.11', display: 'glaucoma ficticio' },
        ],
      },
      bodySite: [site('right')],
      onsetDateTime: '2026-01-01',
    })
    expect(r[id(31)]).toEqual({
      ...condition(31),
      clinicalStatus: clinical('resolved'),
      verificationStatus: verification('confirmed'),
      code: { coding: [{ system: 'http://hl7.org/fhir/sid/icd-10', code: 'H40.1' }] },
      bodySite: [site('both')],
    })
    expect(r[id(32)]).toEqual({
      ...condition(32),
      clinicalStatus: clinical('active'),
      verificationStatus: verification('confirmed'),
      code: { coding: [{ system: 'http://snomed.info/sct', code: '23986001' }] },
    })
  })

  it('says, in a note, what a diagnosis was entered as when migration 0003 read it otherwise', () => {
    const r = resources(bundleOf(signedExam(), ADDED_IN, NOW))
    expect(r[id(33)]!.note).toEqual([
      { text: expect.stringMatching(/^Entered under the system "icd10" .* read as icd10cm /) },
    ])
    expect(r[id(30)]).not.toHaveProperty('note')
    const cie = signedExam({
      diagnoses: [
        {
          ...common(35, 'right'),
          code: 'H40.11',
          system: 'cie10es',
          display: null,
          status: 'active',
          onset: null,
        },
      ],
    })
    expect(resources(bundleOf(cie, ADDED_IN, NOW))[id(35)]!.code.coding).toEqual([
      { system: 'https://clinic.example/fhir/CodeSystem/cie-10-es', code: 'H40.11' },
    ])
  })
})

describe('examBundle: VisionPrescriptions', () => {
  it('carry the prescriber, the dates, the validity, the product by type and each lens as written', () => {
    const r = resources(bundleOf(signedExam(), ADDED_IN, NOW))
    const product = (code: string) => ({
      coding: [{ system: 'http://terminology.hl7.org/CodeSystem/ex-visionprescriptionproduct', code }],
    })
    expect(r[id(40)]).toEqual({
      resourceType: 'VisionPrescription',
      id: id(40),
      extension: [
        {
          url: 'https://clinic.example/fhir/StructureDefinition/vision-prescription-valid-until',
          valueDate: '2028-11-20',
        },
      ],
      status: 'active',
      created: '2026-11-20T10:00:00.000Z',
      patient: { reference: `Patient/${PATIENT}` },
      encounter: { reference: `urn:uuid:${EXAM}` },
      dateWritten: '2026-11-20T10:00:00.000Z',
      prescriber: DRA_LOPEZ,
      lensSpecification: [
        { product: product('lens'), eye: 'right', sphere: -1, cylinder: -0.5, axis: 80, add: 1.5 },
        {
          product: product('lens'),
          eye: 'left',
          sphere: -1.25,
          prism: [{ amount: 1, base: 'out' }],
          backCurve: 8.6,
          diameter: 14.2,
          brand: 'Marca',
        },
      ],
    })
    expect(r[id(41)]!.lensSpecification.map((l: Json) => l.product)).toEqual([
      product('contact'),
      product('contact'),
    ])
  })
})

describe('findingStatus', () => {
  it('counts a finding with no known version as the draft’s', () => {
    const r = resources(bundleOf(signedExam(), { addedIn: {} }, NOW))
    expect(r[id(11)]!.status).toBe('final')
    expect(
      findingStatus({ status: 'signed', version: 1, amendments: 0 }, { state: 'live', addedIn: 1 }),
    ).toBe('final')
    expect(
      findingStatus({ status: 'signed', version: 3, amendments: 1 }, { state: 'live', addedIn: 3 }),
    ).toBe('amended')
    expect(
      findingStatus({ status: 'draft', version: 3, amendments: 0 }, { state: 'superseded', addedIn: 3 }),
    ).toBe('entered-in-error')
  })
})

describe('the bundles of this file', () => {
  it('pass both third-party validators', () => {
    if (!made.length) bundleOf(signedExam(), ADDED_IN, NOW, { findings: 'all' }) // run on its own
    for (const bundle of made) expectValidBundle(bundle)
  })
})
