import { uuidv7 } from '@clinic/platform'
import { fhirProblems } from '@clinic/platform/testing'
import { FINDINGS, companyOf, startApp, type Company, type Harness } from '../helpers'
import { alsoUsed, eyeSite, fromValueSet } from '../value-sets'

/**
 * FHIR R4 read and search of Encounter, Observation, Condition and VisionPrescription (DESIGN.md
 * sections 14.4 and 19): every declared parameter, paging through `next`, the order, errors as
 * OperationOutcome, companies and centers apart; every answer through both third-party validators
 * (fhirProblems), codes checked against the value sets' copy (test/value-sets.ts).
 */

type Json = Record<string, any> // eslint-disable-line @typescript-eslint/no-explicit-any

let h: Harness
let c: Company
beforeAll(async () => {
  h = await startApp({ poolMax: 6 })
  c = companyOf(h)
})
afterAll(() => h.close())

const LOINC = 'http://loinc.org'
const SNOMED = 'http://snomed.info/sct'

/** A FHIR GET: always application/fhir+json, passing both validators (an error: an OperationOutcome). */
async function fhir(company: Company, url: string): Promise<{ status: number; body: Json }> {
  const res = await company.send('GET', url)
  expect(res.headers['content-type']).toMatch(/^application\/fhir\+json/)
  const body = JSON.parse(res.body) as Json
  expect(fhirProblems(body)).toEqual([])
  if (res.statusCode !== 200) expect(body.resourceType).toBe('OperationOutcome')
  return { status: res.statusCode, body }
}
async function read(company: Company, type: string, id: string): Promise<Json> {
  const { status, body } = await fhir(company, `/fhir/R4/${type}/${id}`)
  expect(status).toBe(200)
  return body
}
async function search(company: Company, url: string): Promise<Json> {
  const { status, body } = await fhir(company, url)
  if (status !== 200) throw new Error(`${url}: ${status} ${JSON.stringify(body)}`)
  expect(body).toMatchObject({ resourceType: 'Bundle', type: 'searchset' })
  return body
}
const ids = (bundle: Json): string[] => (bundle.entry ?? []).map((e: Json) => e.resource.id).sort()
const sorted = (...list: string[]) => [...list].sort()

async function ok(company: Company, method: 'POST' | 'GET', url: string, body?: unknown): Promise<Json> {
  const res = await company.send(method, url, body)
  if (res.statusCode >= 300) throw new Error(`${method} ${url}: ${res.statusCode} ${res.body}`)
  return res.json()
}
const add = async (company: Company, examId: string, kind: string, body: unknown): Promise<string> =>
  (await ok(company, 'POST', `/clinical/exams/${examId}/${kind}`, body)).id
const examNow = (company: Company, id: string) => ok(company, 'GET', `/clinical/exams/${id}`)

/**
 * Company c: patient P with a signed exam at ALM1 (acuity right and left, IOP, refraction, a
 * diagnosis, a prescription) and a draft at ALM2 (IOP left, a diagnosis); patient Q with a draft at
 * ALM2 (acuity).
 */
let P: string
let Q: string
let signed: Json
let draft: Json
let other: Json
const f: Record<string, string> = {}
let prescription: string

beforeAll(async () => {
  P = c.newPatient('ALM1')
  Q = c.newPatient('ALM2')
  signed = await c.exam({ patient_id: P, codalmacen: 'ALM1', performed_at: '2026-11-20T09:00:00.000Z' })
  f.acuityRight = await add(c, signed.id, 'visual-acuity', {
    eye: 'right',
    kind: 'best_corrected',
    value: '6/9',
    notation: 'snellen_m',
  })
  f.acuityLeft = await add(c, signed.id, 'visual-acuity', {
    eye: 'left',
    kind: 'uncorrected',
    value: '6/12',
    notation: 'snellen_m',
  })
  // Measured the day after the exam opened: its effectiveDateTime (and `date`) is that day.
  f.iopRight = await add(c, signed.id, 'iop', { ...FINDINGS.iop, measured_at: '2026-11-21T08:00:00Z' })
  f.refractionLeft = await add(c, signed.id, 'refraction', FINDINGS.refraction)
  f.diagnosis = await add(c, signed.id, 'diagnoses', { ...FINDINGS.diagnoses, eye: 'right' })
  await ok(c, 'POST', `/clinical/exams/${signed.id}/sign`)
  prescription = (
    await ok(c, 'POST', `/clinical/exams/${signed.id}/prescriptions`, {
      type: 'spectacles',
      lenses: [
        { eye: 'right', sphere: -1.25 },
        { eye: 'left', sphere: -2.75 },
      ],
    })
  ).id
  signed = await examNow(c, signed.id)

  draft = await c.exam({ patient_id: P, codalmacen: 'ALM2', performed_at: '2025-03-04T10:00:00.000Z' })
  f.draftIop = await add(c, draft.id, 'iop', {
    ...FINDINGS.iop,
    eye: 'left',
    measured_at: '2025-03-04T10:30:00Z',
  })
  f.draftDiagnosis = await add(c, draft.id, 'diagnoses', { code: 'H40.1', system: 'icd10', eye: 'left' })
  draft = await examNow(c, draft.id)

  other = await c.exam({ patient_id: Q, codalmacen: 'ALM2', performed_at: '2026-01-10T12:00:00.000Z' })
  f.otherAcuity = await add(c, other.id, 'visual-acuity', {
    eye: 'both',
    kind: 'near',
    value: '0.5',
    notation: 'decimal',
  })
  other = await examNow(c, other.id)
})

describe('read', () => {
  it('Encounter: the exam, its id, version and last update', async () => {
    const e = await read(c, 'Encounter', signed.id)
    expect(e).toMatchObject({
      resourceType: 'Encounter',
      id: signed.id,
      meta: { versionId: String(signed.version), lastUpdated: signed.updated_at },
      status: 'finished',
      subject: { reference: `Patient/${P}` },
      participant: [{ individual: { reference: 'Practitioner/dr-ficticio' } }],
      period: { start: '2026-11-20T09:00:00.000Z' },
    })
    expect((await read(c, 'Encounter', draft.id)).status).toBe('in-progress')
  })

  it('Observation: laterality, codes and relative references kept; the exam’s version', async () => {
    const right = await read(c, 'Observation', f.acuityRight!)
    const left = await read(c, 'Observation', f.acuityLeft!)
    expect(right.bodySite).toEqual({ coding: [eyeSite('right')] })
    expect(left.bodySite).toEqual({ coding: [eyeSite('left')] })
    expect([right.bodySite.coding[0].code, left.bodySite.coding[0].code]).toEqual(['362502000', '362503005'])
    expect(right.code.coding).toEqual([alsoUsed('419775003')])
    expect(left.code.coding).toEqual([fromValueSet('VisualAcuityOrganizerCodes', '420050001')])
    expect(right).toMatchObject({
      id: f.acuityRight,
      status: 'final',
      meta: { versionId: String(signed.version), lastUpdated: signed.updated_at },
      subject: { reference: `Patient/${P}` },
      encounter: { reference: `Encounter/${signed.id}` },
      performer: [{ reference: 'Practitioner/dr-ficticio' }],
    })
    const iop = await read(c, 'Observation', f.iopRight!)
    expect(iop.code.coding).toEqual([alsoUsed('56844-4')])
    expect(iop.bodySite).toEqual({ coding: [eyeSite('right')] })
    const refraction = await read(c, 'Observation', f.refractionLeft!)
    expect(refraction.bodySite).toEqual({ coding: [eyeSite('left')] })
    expect((await read(c, 'Observation', f.draftIop!)).status).toBe('preliminary')
  })

  it('Condition and VisionPrescription', async () => {
    const d = await read(c, 'Condition', f.diagnosis!)
    expect(d).toMatchObject({
      id: f.diagnosis,
      code: { coding: [{ system: 'http://hl7.org/fhir/sid/icd-10-cm', code: 'H40.11' }] },
      bodySite: [{ coding: [eyeSite('right')] }],
      subject: { reference: `Patient/${P}` },
      encounter: { reference: `Encounter/${signed.id}` },
      meta: { versionId: String(signed.version), lastUpdated: signed.updated_at },
    })
    const rx = await read(c, 'VisionPrescription', prescription)
    expect(rx).toMatchObject({
      id: prescription,
      meta: { versionId: '1' },
      patient: { reference: `Patient/${P}` },
      encounter: { reference: `Encounter/${signed.id}` },
      prescriber: { reference: 'Practitioner/dr-ficticio' },
    })
    expect(rx.lensSpecification.map((l: Json) => [l.eye, l.sphere])).toEqual([
      ['right', -1.25],
      ['left', -2.75],
    ])
    expect(rx.meta.lastUpdated).toBe(rx.dateWritten)
  })

  it('an id of the other type, unknown, malformed or of another company: 404 OperationOutcome', async () => {
    const stranger = companyOf(h)
    const cases: Array<[Company, string, string]> = [
      [c, 'Observation', f.diagnosis!], // a diagnosis is a Condition
      [c, 'Condition', f.iopRight!],
      [c, 'Encounter', uuidv7()],
      [c, 'Observation', uuidv7()],
      [c, 'VisionPrescription', uuidv7()],
      [c, 'Encounter', 'not-a-uuid'],
      [stranger, 'Encounter', signed.id],
      [stranger, 'Observation', f.acuityRight!],
      [stranger, 'Condition', f.diagnosis!],
      [stranger, 'VisionPrescription', prescription],
    ]
    for (const [who, type, id] of cases) {
      const { status, body } = await fhir(who, `/fhir/R4/${type}/${id}`)
      expect([type, id, status]).toEqual([type, id, 404])
      expect(body.issue[0].severity).toBe('error')
    }
  })
})

describe('search', () => {
  it('patient, on every type', async () => {
    expect(ids(await search(c, `/fhir/R4/Encounter?patient=${P}`))).toEqual(sorted(signed.id, draft.id))
    expect(ids(await search(c, `/fhir/R4/Encounter?patient=Patient/${Q}`))).toEqual([other.id])
    expect(ids(await search(c, `/fhir/R4/Encounter?patient=${P},${Q}`))).toHaveLength(3)
    expect(ids(await search(c, `/fhir/R4/Observation?patient=Patient/${P}`))).toEqual(
      sorted(f.acuityRight!, f.acuityLeft!, f.iopRight!, f.refractionLeft!, f.draftIop!),
    )
    expect(ids(await search(c, `/fhir/R4/Condition?patient=${P}`))).toEqual(
      sorted(f.diagnosis!, f.draftDiagnosis!),
    )
    expect(ids(await search(c, `/fhir/R4/VisionPrescription?patient=${P}`))).toEqual([prescription])
    expect((await search(c, `/fhir/R4/VisionPrescription?patient=${Q}`)).total).toBe(0)
    // Two occurrences: both must hold.
    expect((await search(c, `/fhir/R4/Encounter?patient=${P}&patient=${Q}`)).total).toBe(0)
  })

  it('a searchset: total, self link, fullUrls of the resources, lastUpdated in meta', async () => {
    const b = await search(c, `/fhir/R4/Condition?patient=${P}`)
    expect(b.total).toBe(2)
    expect(b.link).toEqual([{ relation: 'self', url: `/fhir/R4/Condition?patient=${P}` }])
    for (const e of b.entry) {
      expect(e.fullUrl).toBe(`/fhir/R4/Condition/${e.resource.id}`)
      expect(e.resource.meta.lastUpdated).toEqual(expect.any(String))
    }
  })

  it('date: Encounter by performed_at, Observation by effectiveDateTime, Condition by recordedDate', async () => {
    const enc = (q: string) => search(c, `/fhir/R4/Encounter?patient=${P}&${q}`).then(ids)
    expect(await enc('date=2026-11-20')).toEqual([signed.id])
    expect(await enc('date=2025-03')).toEqual([draft.id])
    expect(await enc('date=ge2026-01-01')).toEqual([signed.id])
    expect(await enc('date=lt2026-01-01')).toEqual([draft.id])
    expect(await enc('date=gt2025-03-04&date=le2026-11-20')).toEqual([signed.id])
    expect(await enc('date=2024')).toEqual([])

    const obs = (q: string) => search(c, `/fhir/R4/Observation?patient=${P}&${q}`).then(ids)
    // The IOP was measured on the 21st: its own day, not the exam's.
    expect(await obs('date=2026-11-21')).toEqual([f.iopRight])
    expect(await obs('date=2026-11-20')).toEqual(sorted(f.acuityRight!, f.acuityLeft!, f.refractionLeft!))
    expect(await obs('date=2025-03-04T10:30:00Z')).toEqual([f.draftIop])

    const cond = (q: string) => search(c, `/fhir/R4/Condition?patient=${P}&${q}`).then(ids)
    const recorded = (await read(c, 'Condition', f.diagnosis!)).recordedDate as string
    expect(await cond(`date=${recorded.slice(0, 10)}`)).toEqual(sorted(f.diagnosis!, f.draftDiagnosis!))
    expect(await cond('date=lt2020-01-01')).toEqual([])
    expect(await cond(`date=${recorded}`)).toContain(f.diagnosis)
  })

  it('Observation code: system|code, a bare code, alternatives; encounter', async () => {
    const obs = (q: string) => search(c, `/fhir/R4/Observation?patient=${P}&${q}`).then(ids)
    expect(alsoUsed('56844-4').system).toBe(LOINC)
    expect(await obs(`code=${encodeURIComponent(`${LOINC}|56844-4`)}`)).toEqual(
      sorted(f.iopRight!, f.draftIop!),
    )
    expect(await obs(`code=${encodeURIComponent(`${SNOMED}|419775003`)}`)).toEqual([f.acuityRight])
    expect(await obs(`code=420050001`)).toEqual([f.acuityLeft])
    expect(await obs(`code=${encodeURIComponent(`${SNOMED}|251794006`)}`)).toEqual([f.refractionLeft])
    // The right code under the wrong system, no system at all, an unknown code: nothing.
    expect(await obs(`code=${encodeURIComponent(`${LOINC}|251794006`)}`)).toEqual([])
    expect(await obs(`code=${encodeURIComponent('|56844-4')}`)).toEqual([])
    expect(await obs(`code=12345`)).toEqual([])
    expect(await obs(`code=56844-4,251794006`)).toEqual(sorted(f.iopRight!, f.draftIop!, f.refractionLeft!))
    expect(await obs(`code=56844-4&code=251794006`)).toEqual([])
    // A component's code (sphere) is not the Observation's code.
    expect(await obs(`code=251795007`)).toEqual([])

    expect(await obs(`encounter=Encounter/${draft.id}`)).toEqual([f.draftIop])
    expect(await obs(`encounter=${signed.id}&code=56844-4`)).toEqual([f.iopRight])
    expect(await obs(`encounter=${uuidv7()}`)).toEqual([])
  })

  it('_id and _lastUpdated', async () => {
    const all = `/fhir/R4/Observation?patient=${P}`
    expect(ids(await search(c, `${all}&_id=${f.iopRight},${f.draftIop}`))).toEqual(
      sorted(f.iopRight!, f.draftIop!),
    )
    expect(ids(await search(c, `${all}&_id=not-a-uuid`))).toEqual([])
    // The findings carry their exam's last update: the draft's were updated after the signed exam's.
    expect(ids(await search(c, `${all}&_lastUpdated=gt${signed.updated_at}`))).toEqual([f.draftIop])
    expect(ids(await search(c, `${all}&_lastUpdated=le${signed.updated_at}`))).toHaveLength(4)
    expect(ids(await search(c, `/fhir/R4/Encounter?_lastUpdated=eq${draft.updated_at}`))).toContain(draft.id)
  })

  it('pages through `next` links, ascending and descending by last update, each row once', async () => {
    const d = companyOf(h)
    const patient = d.newPatient('ALM1')
    const exams: string[] = []
    for (let i = 0; i < 4; i++) {
      const exam = await d.exam({ patient_id: patient })
      exams.push(exam.id)
      for (const eye of ['right', 'left'])
        await add(d, exam.id, 'iop', { ...FINDINGS.iop, eye, mmhg: 12 + i })
    }
    for (const type of ['Observation', 'Encounter'])
      for (const sort of ['', '&_sort=-_lastUpdated', '&_sort=_lastUpdated']) {
        let url: string | undefined = `/fhir/R4/${type}?patient=${patient}&_count=3${sort}`
        const seen: string[] = []
        const instants: string[] = []
        let pages = 0
        while (url) {
          const b = await search(d, url)
          expect(b.total).toBe(type === 'Observation' ? 8 : 4)
          pages++
          for (const e of b.entry ?? []) {
            seen.push(e.resource.id)
            instants.push(e.resource.meta.lastUpdated)
          }
          url = b.link.find((l: Json) => l.relation === 'next')?.url
          if (url) expect(url).toMatch(/^\/fhir\/R4\/.*_cursor=/)
        }
        expect(new Set(seen).size).toBe(seen.length)
        expect(seen).toHaveLength(type === 'Observation' ? 8 : 4)
        expect(pages).toBe(type === 'Observation' ? 3 : 2)
        const order = [...instants].sort()
        expect(instants).toEqual(sort === '&_sort=-_lastUpdated' ? order.reverse() : order)
      }
    // Newest first: the last exam opened (and its findings) comes first.
    const desc = await search(d, `/fhir/R4/Encounter?patient=${patient}&_sort=-_lastUpdated&_count=1`)
    expect(desc.entry[0].resource.id).toBe(exams.at(-1))
    expect((await search(d, `/fhir/R4/Encounter?_count=0`)).entry ?? []).toEqual([])
  })

  it('an amendment: the removed finding is entered-in-error, readable and found, with the new version', async () => {
    const d = companyOf(h)
    const exam = await d.exam()
    const iop = await add(d, exam.id, 'iop', FINDINGS.iop)
    const diagnosis = await add(d, exam.id, 'diagnoses', FINDINGS.diagnoses)
    await ok(d, 'POST', `/clinical/exams/${exam.id}/sign`)
    const before = await examNow(d, exam.id)
    const amended = await ok(d, 'POST', `/clinical/exams/${exam.id}/amendments`, {
      reason: 'motivo ficticio',
      add: { iop: [{ ...FINDINGS.iop, mmhg: 15.5 }] },
      remove: [iop, diagnosis],
    })
    const added = amended.iop.find((x: Json) => x.state === 'live').id as string
    const o = await read(d, 'Observation', iop)
    expect(o).toMatchObject({ status: 'entered-in-error', meta: { versionId: String(amended.version) } })
    expect((await read(d, 'Observation', added)).status).toBe('amended')
    const cond = await read(d, 'Condition', diagnosis)
    expect(cond.verificationStatus.coding[0].code).toBe('entered-in-error')
    expect(cond.clinicalStatus).toBeUndefined()
    const since = await search(d, `/fhir/R4/Observation?_lastUpdated=gt${before.updated_at}`)
    expect(ids(since)).toEqual(sorted(iop, added))
    expect(ids(await search(d, `/fhir/R4/Condition?patient=${exam.patient_id}`))).toEqual([diagnosis])
  })

  it('a center-limited token sees nothing of another center', async () => {
    const alm2 = companyOf(h, { companyId: c.principal.companyId, allowedCenters: ['ALM2'] })
    for (const [type, id] of [
      ['Encounter', signed.id],
      ['Observation', f.acuityRight!],
      ['Condition', f.diagnosis!],
      ['VisionPrescription', prescription],
    ] as const)
      expect((await fhir(alm2, `/fhir/R4/${type}/${id}`)).status).toBe(404)
    expect((await read(alm2, 'Encounter', draft.id)).id).toBe(draft.id)
    expect(ids(await search(alm2, `/fhir/R4/Encounter?patient=${P},${Q}`))).toEqual(
      sorted(draft.id, other.id),
    )
    expect(ids(await search(alm2, `/fhir/R4/Observation?patient=${P}`))).toEqual([f.draftIop])
    expect(ids(await search(alm2, `/fhir/R4/Condition?patient=${P}`))).toEqual([f.draftDiagnosis])
    expect((await search(alm2, `/fhir/R4/VisionPrescription?patient=${P}`)).total).toBe(0)
    expect((await search(alm2, `/fhir/R4/Observation?_id=${f.acuityRight}`)).total).toBe(0)
  })

  it('another company finds none of it', async () => {
    const stranger = companyOf(h)
    for (const type of ['Encounter', 'Observation', 'Condition', 'VisionPrescription'])
      expect((await search(stranger, `/fhir/R4/${type}?patient=${P}`)).total).toBe(0)
    expect((await search(stranger, `/fhir/R4/Encounter`)).total).toBe(0)
  })

  it('an unknown parameter, a modifier, a bad value or a bad cursor: 400 OperationOutcome', async () => {
    for (const url of [
      '/fhir/R4/Encounter?code=56844-4',
      '/fhir/R4/Condition?code=H40.11',
      '/fhir/R4/VisionPrescription?date=2026',
      '/fhir/R4/Observation?status=final',
      '/fhir/R4/Observation?patient:missing=true',
      '/fhir/R4/Observation?date=yesterday',
      '/fhir/R4/Observation?encounter=Patient/x',
      '/fhir/R4/Encounter?_count=5000',
      '/fhir/R4/Encounter?_cursor=nonsense',
    ]) {
      const { status, body } = await fhir(c, url)
      expect([url, status]).toEqual([url, 400])
      expect(body.issue.length).toBeGreaterThan(0)
    }
  })
})
