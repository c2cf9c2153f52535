import { companyOf, startApp, type Company, type Harness } from '../helpers'
import { expectValidBundle } from '../fhir-validator'
import { alsoUsed, eyeSite, fromValueSet, r4Codes } from '../value-sets'

/**
 * The exam as FHIR R4 (DESIGN 14.4), checked against the value sets (test/value-sets.ts), never
 * against the service's constants, and every bundle through both third-party validators.
 */

let h: Harness
let c: Company
beforeAll(async () => {
  h = await startApp({ poolMax: 6 })
  c = companyOf(h)
})
afterAll(() => h.close())

type Json = Record<string, any> // eslint-disable-line @typescript-eslint/no-explicit-any
const UCUM = 'http://unitsofmeasure.org'

async function add(examId: string, kind: string, body: Json): Promise<string> {
  const res = await c.send('POST', `/clinical/exams/${examId}/${kind}`, body)
  if (res.statusCode !== 201) throw new Error(`${kind}: ${res.statusCode} ${res.body}`)
  return res.json().id
}
async function bundleOf(examId: string, company = c): Promise<Json> {
  const res = await company.send('GET', `/clinical/exams/${examId}`, undefined, {
    accept: 'application/fhir+json',
  })
  expect(res.statusCode).toBe(200)
  const bundle = JSON.parse(res.body)
  expectValidBundle(bundle)
  return bundle
}
const resource = (bundle: Json, id: string): Json => {
  const found = bundle.entry.find((e: Json) => e.resource.id === id)
  if (!found) throw new Error(`no resource ${id} in the bundle`)
  return found.resource
}
const sign = async (examId: string) =>
  expect((await c.send('POST', `/clinical/exams/${examId}/sign`)).statusCode).toBe(200)

describe('laterality: every kind of finding carries the value set’s code of its own eye', () => {
  it('acuity (right, left, both), IOP, refraction, diagnoses (right, left, both, none) and lenses', async () => {
    const exam = await c.exam({ practitioner: 'dra-lopez' })
    const made: Array<{ id: string; eye: string; kind: string }> = []
    const finding = async (kind: string, body: Json) =>
      made.push({ id: await add(exam.id, kind, body), eye: body.eye, kind })
    for (const eye of ['right', 'left', 'both'])
      await finding('visual-acuity', { eye, kind: 'best_corrected', value: '6/9', notation: 'snellen_m' })
    for (const eye of ['right', 'left']) {
      await finding('iop', { eye, mmhg: 16, method: 'goldmann', measured_at: '2026-11-20T09:00:00Z' })
      await finding('refraction', { eye, kind: 'manifest', sphere: -1.5, cylinder: -0.5, axis: 90 })
    }
    for (const eye of ['right', 'left', 'both', 'not_applicable'])
      await finding('diagnoses', { eye, code: 'H40.1', system: 'icd10' })
    await sign(exam.id)
    const issued = await c.send('POST', `/clinical/exams/${exam.id}/prescriptions`, {
      type: 'spectacles',
      lenses: [
        { eye: 'right', sphere: -1.25 },
        { eye: 'left', sphere: -2.75 },
      ],
    })
    expect(issued.statusCode).toBe(201)

    const bundle = await bundleOf(exam.id)
    for (const f of made) {
      const r = resource(bundle, f.id)
      const site = f.kind === 'diagnoses' ? r.bodySite?.[0] : r.bodySite
      if (f.eye === 'not_applicable') expect(r.bodySite).toBeUndefined()
      else expect(site).toEqual({ coding: [eyeSite(f.eye)] })
    }
    // The fixture itself, read independently: right is 362502000, left 362503005, both 362508001.
    expect([eyeSite('right').code, eyeSite('left').code, eyeSite('both').code]).toEqual([
      '362502000',
      '362503005',
      '362508001',
    ])
    const lenses = resource(bundle, issued.json().id).lensSpecification
    expect(lenses.map((l: Json) => [l.eye, l.sphere])).toEqual([
      ['right', -1.25],
      ['left', -2.75],
    ])
    for (const l of lenses) expect(r4Codes('http://hl7.org/fhir/vision-eye-codes')).toContain(l.eye)
  })

  it('has no `both` where a finding is of one eye: IOP, refraction and a lens refuse it', async () => {
    const exam = await c.exam()
    const iop = await c.send('POST', `/clinical/exams/${exam.id}/iop`, {
      eye: 'both',
      mmhg: 16,
      method: 'goldmann',
      measured_at: '2026-11-20T09:00:00Z',
    })
    const refraction = await c.send('POST', `/clinical/exams/${exam.id}/refraction`, {
      eye: 'both',
      kind: 'manifest',
      sphere: -1,
    })
    expect([iop.statusCode, refraction.statusCode]).toEqual([400, 400])
    await add(exam.id, 'iop', {
      eye: 'right',
      mmhg: 16,
      method: 'goldmann',
      measured_at: '2026-11-20T09:00:00Z',
    })
    await sign(exam.id)
    const lens = await c.send('POST', `/clinical/exams/${exam.id}/prescriptions`, {
      type: 'spectacles',
      lenses: [{ eye: 'both', sphere: -1 }],
    })
    expect(lens.statusCode).toBe(400)
  })
})

describe('codes, units and components as DESIGN 14.4 names them', () => {
  it('acuity: each kind its code, logMAR as the value, the entry as entered in a component', async () => {
    const exam = await c.exam()
    const kinds: Array<[string, Json, () => ReturnType<typeof fromValueSet>]> = [
      [
        'near',
        { value: '0.5', notation: 'decimal' },
        () => fromValueSet('VisualAcuityObservationCodes', '251743004'),
      ],
      [
        'pinhole',
        { value: '6/12', notation: 'snellen_m' },
        () => fromValueSet('VisualAcuityObservationCodes', '419475002'),
      ],
      [
        'uncorrected',
        { value: '20/40', notation: 'snellen_ft' },
        () => fromValueSet('VisualAcuityOrganizerCodes', '420050001'),
      ],
      ['best_corrected', { value: '76', notation: 'etdrs_letters' }, () => alsoUsed('419775003')],
      [
        'habitual',
        { value: '0.18', notation: 'logmar' },
        () => fromValueSet('VisualAcuityObservationCodes', '251739003'),
      ],
    ]
    const ids: Record<string, string> = {}
    for (const [kind, value] of kinds)
      ids[kind] = await add(exam.id, 'visual-acuity', { eye: 'right', kind, ...value })
    const lp = await add(exam.id, 'visual-acuity', {
      eye: 'left',
      kind: 'uncorrected',
      value: 'LP',
      notation: 'qualitative',
    })
    const bundle = await bundleOf(exam.id)
    for (const [kind, value, code] of kinds) {
      const r = resource(bundle, ids[kind]!)
      expect(r.code.coding).toEqual([code()])
      expect(r.code.text).toContain(kind)
      expect(r.valueQuantity).toMatchObject({ unit: 'logMAR', system: UCUM, code: '{logMAR}' })
      expect(r.component).toEqual([
        { code: { text: `as entered (${value.notation})` }, valueString: value.value },
      ])
    }
    expect(resource(bundle, ids.near!).valueQuantity.value).toBe(0.3)
    expect(resource(bundle, ids.habitual!).code.coding[0].display).toBe('Distance visual acuity')
    // LP has no logMAR: the grade is the value.
    expect(resource(bundle, lp)).toMatchObject({ valueCodeableConcept: { text: 'LP' } })
    expect(resource(bundle, lp).valueQuantity).toBeUndefined()
  })

  it('IOP in LOINC and mm[Hg] with its method coded; refraction with every component, prism included', async () => {
    const exam = await c.exam()
    const iop = await add(exam.id, 'iop', {
      eye: 'left',
      mmhg: 21.5,
      method: 'icare',
      measured_at: '2026-11-20T08:10:00Z',
      cct_um: 540,
    })
    const refraction = await add(exam.id, 'refraction', {
      eye: 'right',
      kind: 'cycloplegic',
      sphere: 1.25,
      cylinder: -0.75,
      axis: 175,
      add: 2,
      prism: { amount: 1.5, base: 'in' },
    })
    const bundle = await bundleOf(exam.id)
    expect(resource(bundle, iop)).toMatchObject({
      code: { coding: [alsoUsed('56844-4')] },
      effectiveDateTime: '2026-11-20T08:10:00.000Z',
      valueQuantity: { value: 21.5, system: UCUM, code: 'mm[Hg]' },
      method: { coding: [{ code: 'icare' }], text: 'icare' },
      component: [{ valueQuantity: { value: 540, system: UCUM, code: 'um' } }],
    })
    const r = resource(bundle, refraction)
    expect(r.code.coding).toEqual([alsoUsed('251794006')])
    expect(r.method).toMatchObject({ coding: [{ code: 'cycloplegic' }] })
    const diop = (value: number) => ({ value, unit: 'dioptre', system: UCUM, code: '[diop]' })
    const rc = (code: string) => ({ coding: [fromValueSet('RefractionObservationCodes', code)] })
    expect(r.component).toEqual([
      { code: rc('251795007'), valueQuantity: diop(1.25) },
      { code: rc('251797004'), valueQuantity: diop(-0.75) },
      { code: rc('251799001'), valueQuantity: { value: 175, unit: 'degree', system: UCUM, code: 'deg' } },
      { code: rc('397282003'), valueQuantity: diop(2) },
      {
        code: { text: 'prism amount' },
        valueQuantity: { value: 1.5, unit: 'prism dioptre', system: UCUM, code: "[p'diop]" },
      },
      {
        code: rc('246223004'),
        valueCodeableConcept: {
          coding: [{ system: 'http://hl7.org/fhir/vision-base-codes', code: 'in' }],
          text: 'in',
        },
      },
    ])
    expect(r4Codes('http://hl7.org/fhir/vision-base-codes')).toContain('in')
  })

  it('diagnoses: the Coding’s system says exactly which code system the code is from', async () => {
    const exam = await c.exam()
    const systems: Array<[string, string, string]> = [
      ['icd10', 'H40.1', 'http://hl7.org/fhir/sid/icd-10'],
      ['icd10cm', 'H40.11', 'http://hl7.org/fhir/sid/icd-10-cm'],
      ['cie10es', 'H40.11', 'https://clinic.example/fhir/CodeSystem/cie-10-es'],
      ['snomed', '23986001', 'http://snomed.info/sct'],
    ]
    const ids: string[] = []
    for (const [system, code] of systems)
      ids.push(await add(exam.id, 'diagnoses', { system, code, eye: 'right' }))
    const bundle = await bundleOf(exam.id)
    systems.forEach(([, code, uri], i) =>
      expect(resource(bundle, ids[i]!).code.coding).toEqual([{ system: uri, code }]),
    )
    // H40.11 is ICD-10-CM: WHO ICD-10 has no such code, so `icd10` refuses it.
    const who = await c.send('POST', `/clinical/exams/${exam.id}/diagnoses`, {
      system: 'icd10',
      code: 'H40.11',
    })
    expect([who.statusCode, who.json().errors[0].path]).toEqual([400, '/code'])
  })
})
