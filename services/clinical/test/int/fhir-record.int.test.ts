import { companyOf, startApp, type Company, type Harness } from '../helpers'
import { expectValidBundle } from '../fhir-validator'
import { eyeSite, r4Codes } from '../value-sets'

/**
 * The record's life in FHIR (DESIGN 14.4): statuses through drafting, signing and amending; the
 * prescription's prescriber, date and validity; and the README's clinical walk-through as an
 * integrator would fetch it.
 */

let h: Harness
let c: Company
beforeAll(async () => {
  h = await startApp({ poolMax: 6 })
  c = companyOf(h)
})
afterAll(() => h.close())

type Json = Record<string, any> // eslint-disable-line @typescript-eslint/no-explicit-any
const FHIR = { accept: 'application/fhir+json' }

async function post(path: string, body?: Json, status = 201): Promise<Json> {
  const res = await c.send('POST', path, body)
  if (res.statusCode !== status) throw new Error(`${path}: ${res.statusCode} ${res.body}`)
  return res.json()
}
async function bundleOf(examId: string): Promise<Json> {
  const bundle = JSON.parse((await c.send('GET', `/clinical/exams/${examId}`, undefined, FHIR)).body)
  expectValidBundle(bundle)
  return bundle
}
const byId = (bundle: Json) =>
  Object.fromEntries(bundle.entry.map((e: Json) => [e.resource.id, e.resource])) as Record<string, Json>
const IOP = { eye: 'right', mmhg: 18, method: 'goldmann', measured_at: '2026-11-20T09:15:00Z' }

describe('statuses', () => {
  it('preliminary in a draft, final once signed; after amendments only what they added is amended', async () => {
    const exam = await c.exam()
    const iop = await post(`/clinical/exams/${exam.id}/iop`, IOP)
    const dx = await post(`/clinical/exams/${exam.id}/diagnoses`, {
      code: 'H40.1',
      system: 'icd10',
      status: 'suspected',
    })
    const draft = byId(await bundleOf(exam.id))
    expect([draft[exam.id]!.status, draft[iop.id]!.status]).toEqual(['in-progress', 'preliminary'])
    expect(draft[dx.id]!.verificationStatus.coding[0].code).toBe('provisional')

    await post(`/clinical/exams/${exam.id}/sign`, undefined, 200)
    const signed = byId(await bundleOf(exam.id))
    expect([signed[exam.id]!.status, signed[iop.id]!.status]).toEqual(['finished', 'final'])

    const first = await post(
      `/clinical/exams/${exam.id}/amendments`,
      { reason: 'presion repetida', add: { iop: [{ ...IOP, mmhg: 19 }] }, remove: [iop.id] },
      200,
    )
    const second = await post(
      `/clinical/exams/${exam.id}/amendments`,
      {
        reason: 'resuelto',
        add: { diagnoses: [{ code: 'H40.1', system: 'icd10', status: 'resolved' }] },
        remove: [dx.id],
      },
      200,
    )
    const repeated = first.iop.find((f: Json) => f.state === 'live')
    const resolved = second.diagnoses.find((f: Json) => f.state === 'live')
    const read = await c.send('GET', `/clinical/exams/${exam.id}`)
    expect(read.json().amendments).toBe(2)
    const bundle = byId(await bundleOf(exam.id))
    // The superseded pressure and diagnosis are left out; what each amendment added is amended.
    expect(bundle[iop.id]).toBeUndefined()
    expect(bundle[dx.id]).toBeUndefined()
    expect(bundle[repeated.id]!.status).toBe('amended')
    expect(bundle[resolved.id]!.clinicalStatus.coding[0].code).toBe('resolved')
    expect(bundle[resolved.id]!.verificationStatus.coding[0].code).toBe('confirmed')
    const statuses = r4Codes('http://hl7.org/fhir/observation-status')
    for (const r of Object.values(bundle))
      if (r.resourceType === 'Observation') expect(statuses).toContain(r.status)
  })

  it('keeps an original finding final when an amendment adds another beside it', async () => {
    const exam = await c.exam()
    const iop = await post(`/clinical/exams/${exam.id}/iop`, IOP)
    await post(`/clinical/exams/${exam.id}/sign`, undefined, 200)
    const amended = await post(
      `/clinical/exams/${exam.id}/amendments`,
      { reason: 'ojo izquierdo olvidado', add: { iop: [{ ...IOP, eye: 'left' }] } },
      200,
    )
    const left = amended.iop.find((f: Json) => f.eye === 'left')
    const bundle = byId(await bundleOf(exam.id))
    expect([bundle[iop.id]!.status, bundle[left.id]!.status]).toEqual(['final', 'amended'])
    expect(bundle[left.id]!.bodySite).toEqual({ coding: [eyeSite('left')] })
  })
})

describe('VisionPrescription', () => {
  it('names the exam’s practitioner as prescriber, the issue date, and carries valid_until', async () => {
    const exam = await c.exam({ practitioner: 'dra-lopez' })
    await post(`/clinical/exams/${exam.id}/iop`, IOP)
    await post(`/clinical/exams/${exam.id}/sign`, undefined, 200)
    const p = await post(`/clinical/exams/${exam.id}/prescriptions`, {
      type: 'contact_lenses',
      lenses: [{ eye: 'left', sphere: -3, base_curve_mm: 8.6, diameter_mm: 14.2, brand: 'Marca' }],
    })
    const vp = byId(await bundleOf(exam.id))[p.id]!
    expect(vp).toMatchObject({
      prescriber: { reference: 'Practitioner/dra-lopez', type: 'Practitioner' },
      dateWritten: p.issued_at,
      extension: [
        {
          url: 'https://clinic.example/fhir/StructureDefinition/vision-prescription-valid-until',
          valueDate: p.valid_until,
        },
      ],
      lensSpecification: [{ eye: 'left', sphere: -3, backCurve: 8.6, diameter: 14.2, brand: 'Marca' }],
    })
    // One year for contact lenses (DESIGN 14).
    expect(Number(p.valid_until.slice(0, 4)) - Number(p.issued_at.slice(0, 4))).toBe(1)
  })

  it('names a practitioner who is not a practitioner id by display, still a Practitioner reference', async () => {
    const exam = await c.exam({ practitioner: 'Dra. López' })
    await post(`/clinical/exams/${exam.id}/iop`, IOP)
    await post(`/clinical/exams/${exam.id}/sign`, undefined, 200)
    const p = await post(`/clinical/exams/${exam.id}/prescriptions`, {
      type: 'spectacles',
      lenses: [{ eye: 'right', sphere: -1 }],
    })
    const bundle = byId(await bundleOf(exam.id))
    expect(bundle[p.id]!.prescriber).toEqual({ type: 'Practitioner', display: 'Dra. López' })
    expect(bundle[exam.id]!.participant).toEqual([
      { individual: { type: 'Practitioner', display: 'Dra. López' } },
    ])
  })
})

describe('the README’s clinical walk-through', () => {
  it('makes a bundle both validators accept, every finding on its own eye’s code', async () => {
    // As README.md "Clinical records (ophthalmology)" does it, step by step.
    const exam = await c.exam({
      practitioner: 'dra-lopez',
      kind: 'follow_up',
      chief_complaint: 'control de presion',
    })
    const acuity = await post(`/clinical/exams/${exam.id}/visual-acuity`, {
      eye: 'right',
      kind: 'best_corrected',
      value: '6/9',
      notation: 'snellen_m',
    })
    const iop = await post(`/clinical/exams/${exam.id}/iop`, {
      eye: 'right',
      method: 'goldmann',
      measured_at: new Date().toISOString(),
      mmhg: 24,
    })
    const refraction = await post(`/clinical/exams/${exam.id}/refraction`, {
      eye: 'left',
      kind: 'manifest',
      sphere: -2.25,
      cylinder: 0.75,
      axis: 30,
    })
    const dx = await post(`/clinical/exams/${exam.id}/diagnoses`, {
      code: 'H40.11',
      system: 'icd10cm',
      eye: 'right',
      status: 'suspected',
    })
    await post(`/clinical/exams/${exam.id}/sign`, undefined, 200)
    const amended = await post(
      `/clinical/exams/${exam.id}/amendments`,
      {
        reason: 'presion mal transcrita',
        remove: [iop.id],
        add: { iop: [{ eye: 'right', mmhg: 21, method: 'goldmann', measured_at: new Date().toISOString() }] },
      },
      200,
    )
    const p = await post(`/clinical/exams/${exam.id}/prescriptions`, {
      type: 'spectacles',
      lenses: [
        { eye: 'right', sphere: -1.5 },
        { eye: 'left', sphere: -2.25, cylinder: 0.75, axis: 30 },
      ],
    })
    const bundle = await bundleOf(exam.id)
    expect(bundle.entry.map((e: Json) => e.resource.resourceType)).toEqual([
      'Encounter',
      'Observation',
      'Observation',
      'Observation',
      'Condition',
      'VisionPrescription',
    ])
    const r = byId(bundle)
    const newIop = amended.iop.find((f: Json) => f.state === 'live')
    expect(r[acuity.id]!.bodySite).toEqual({ coding: [eyeSite('right')] })
    expect(r[newIop.id]!.bodySite).toEqual({ coding: [eyeSite('right')] })
    expect(r[refraction.id]!.bodySite).toEqual({ coding: [eyeSite('left')] })
    expect(r[dx.id]!.bodySite).toEqual([{ coding: [eyeSite('right')] }])
    expect(r[dx.id]!.code.coding).toEqual([{ system: 'http://hl7.org/fhir/sid/icd-10-cm', code: 'H40.11' }])
    expect(r[p.id]!.lensSpecification.map((l: Json) => l.eye)).toEqual(['right', 'left'])
    // The plus cylinder, transposed: -1.50 -0.75 x 120.
    expect(r[p.id]!.lensSpecification[1]).toMatchObject({ sphere: -1.5, cylinder: -0.75, axis: 120 })
  })
})
