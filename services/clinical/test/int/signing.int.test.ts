import { FINDINGS, companyOf, outboxOf, startApp, type Company, type Harness } from '../helpers'
import { expectValidBundle } from '../fhir-validator'
import { eyeSite } from '../value-sets'

let h: Harness
let c: Company
beforeAll(async () => {
  h = await startApp({ poolMax: 6 })
  c = companyOf(h)
})
afterAll(() => h.close())

type Json = Record<string, any> // eslint-disable-line @typescript-eslint/no-explicit-any

/** A draft with one finding of each kind, signed; with the ids of its findings by kind. */
async function signedExam(body: Json = {}, company = c) {
  const exam = await company.exam(body)
  const ids: Record<string, string> = {}
  for (const [kind, finding] of Object.entries(FINDINGS)) {
    const res = await company.send('POST', `/clinical/exams/${exam.id}/${kind}`, finding)
    expect(res.statusCode).toBe(201)
    ids[kind] = res.json().id
  }
  const signed = await company.send('POST', `/clinical/exams/${exam.id}/sign`)
  expect(signed.statusCode).toBe(200)
  return { exam: signed.json() as Json, ids }
}

describe('signing', () => {
  it('makes the exam final: PATCH, a finding’s POST or DELETE, and signing again are 409 exam_signed', async () => {
    const { exam, ids } = await signedExam()
    expect(exam).toMatchObject({ status: 'signed', signed_by: 'test-user', amendments: 0 })
    expect(exam.signed_at).toEqual(expect.any(String))
    const refused = [
      await c.send('PATCH', `/clinical/exams/${exam.id}`, { notes: 'cambio' }),
      await c.send('POST', `/clinical/exams/${exam.id}/iop`, FINDINGS.iop),
      await c.send('DELETE', `/clinical/exams/${exam.id}/iop/${ids.iop}`),
      await c.send('POST', `/clinical/exams/${exam.id}/sign`),
    ]
    for (const res of refused) {
      expect(res.statusCode).toBe(409)
      expect(res.headers['content-type']).toContain('application/problem+json')
      expect(res.json().code).toBe('exam_signed')
    }
    const read = await c.send('GET', `/clinical/exams/${exam.id}`)
    expect(read.json()).toEqual(exam)
    const events = await outboxOf(h.owner, c.principal.companyId, exam.id)
    expect(events.map((e) => e.type)).toEqual([
      'clinical.exam.created',
      ...Object.keys(FINDINGS).map(() => 'clinical.exam.updated'),
      'clinical.exam.signed',
    ])
  })

  it('refuses an exam with no finding at all (409 exam_empty); it stays a draft', async () => {
    const exam = await c.exam({ notes: 'el paciente se fue antes de la exploracion' })
    const res = await c.send('POST', `/clinical/exams/${exam.id}/sign`)
    expect([res.statusCode, res.json().code]).toEqual([409, 'exam_empty'])
    expect(res.headers['content-type']).toContain('application/problem+json')
    const read = (await c.send('GET', `/clinical/exams/${exam.id}`)).json()
    expect(read).toMatchObject({ status: 'draft', signed_at: null, version: exam.version })
    // A finding added and deleted again leaves it empty: still refused.
    const iop = await c.send('POST', `/clinical/exams/${exam.id}/iop`, FINDINGS.iop)
    await c.send('DELETE', `/clinical/exams/${exam.id}/iop/${iop.json().id}`)
    expect((await c.send('POST', `/clinical/exams/${exam.id}/sign`)).json().code).toBe('exam_empty')
    await c.send('POST', `/clinical/exams/${exam.id}/iop`, FINDINGS.iop)
    expect((await c.send('POST', `/clinical/exams/${exam.id}/sign`)).statusCode).toBe(200)
  })
})

describe('amendments', () => {
  it('make one new version with its reason; removed findings stay readable as superseded', async () => {
    const { exam, ids } = await signedExam()
    const res = await c.send('POST', `/clinical/exams/${exam.id}/amendments`, {
      reason: 'presion mal transcrita',
      add: { iop: [{ ...FINDINGS.iop, mmhg: 15.5 }] },
      remove: [ids.iop],
    })
    expect(res.statusCode).toBe(200)
    const amended = res.json()
    expect(amended).toMatchObject({ status: 'signed', amendments: 1, version: exam.version + 1 })
    expect(amended.iop).toEqual([
      expect.objectContaining({ id: ids.iop, state: 'superseded', mmhg: 17.5 }),
      expect.objectContaining({ state: 'live', mmhg: 15.5 }),
    ])

    const history = (await c.send('GET', `/clinical/exams/${exam.id}/history`)).json().data
    expect(history.map((v: Json) => v.action)).toEqual([
      'created',
      'finding_added',
      'finding_added',
      'finding_added',
      'finding_added',
      'signed',
      'amended',
    ])
    expect(history.at(-1)).toMatchObject({
      version: amended.version,
      reason: 'presion mal transcrita',
      by: { username: 'test-user' },
      changes: { fields: ['iop'], added: [amended.iop[1].id], superseded: [ids.iop] },
    })
    // A superseded finding is not superseded twice; an amendment of nothing is refused.
    const twice = await c.send('POST', `/clinical/exams/${exam.id}/amendments`, {
      reason: 'x',
      remove: [ids.iop],
    })
    expect(twice.statusCode).toBe(400)
    expect(twice.json().errors).toEqual([{ path: '/remove/0', message: 'is already superseded' }])
    const nothing = await c.send('POST', `/clinical/exams/${exam.id}/amendments`, { reason: 'x' })
    expect(nothing.statusCode).toBe(400)
  })

  it('are made once per Idempotency-Key: a retry answers the first amendment, another body is a conflict', async () => {
    const { exam } = await signedExam()
    const url = `/clinical/exams/${exam.id}/amendments`
    const body = { reason: 'agudeza olvidada', add: { visual_acuity: [FINDINGS['visual-acuity']] } }
    const key = { 'idempotency-key': `amend-${exam.id}` }
    const first = await c.send('POST', url, body, key)
    expect(first.statusCode).toBe(200)
    const retry = await c.send('POST', url, body, key)
    expect([retry.statusCode, retry.headers['idempotent-replayed']]).toEqual([200, 'true'])
    expect(retry.json()).toEqual(first.json())
    const other = await c.send('POST', url, { ...body, reason: 'otra' }, key)
    expect([other.statusCode, other.json().code]).toEqual([409, 'idempotency_conflict'])
    const read = (await c.send('GET', `/clinical/exams/${exam.id}`)).json()
    expect([read.amendments, read.visual_acuity.length]).toEqual([1, 2])
    expect(read).toEqual(first.json())
    const events = await outboxOf(h.owner, c.principal.companyId, exam.id)
    expect(events.filter((e) => e.type === 'clinical.exam.amended')).toHaveLength(1)
  })

  it('refuse to supersede another exam’s finding, naming it; nothing changes', async () => {
    const { exam } = await signedExam()
    const other = await signedExam()
    const res = await c.send('POST', `/clinical/exams/${exam.id}/amendments`, {
      reason: 'x',
      remove: [other.ids.iop],
    })
    expect(res.statusCode).toBe(400)
    expect(res.json().errors).toEqual([{ path: '/remove/0', message: 'is not a finding of this exam' }])
    expect((await c.send('GET', `/clinical/exams/${exam.id}`)).json()).toEqual(exam)
    expect((await c.send('GET', `/clinical/exams/${other.exam.id}`)).json().iop[0].state).toBe('live')
  })

  it('checks the findings an amendment adds as their own POST does', async () => {
    const { exam } = await signedExam()
    const res = await c.send('POST', `/clinical/exams/${exam.id}/amendments`, {
      reason: 'x',
      add: { visual_acuity: [{ ...FINDINGS['visual-acuity'], value: '6/' }] },
    })
    expect(res.statusCode).toBe(400)
    expect(res.json().errors).toEqual([{ path: '/add/visual_acuity/0/value', message: expect.any(String) }])
  })

  it('racing each other, leave two versions, none lost', async () => {
    const { exam } = await signedExam()
    const [a, b] = await Promise.all([
      c.send('POST', `/clinical/exams/${exam.id}/amendments`, {
        reason: 'primera',
        add: { diagnoses: [{ code: 'H25', system: 'icd10', eye: 'left' }] },
      }),
      c.send('POST', `/clinical/exams/${exam.id}/amendments`, {
        reason: 'segunda',
        add: { diagnoses: [{ code: 'H52.1', system: 'icd10', eye: 'right' }] },
      }),
    ])
    expect([a!.statusCode, b!.statusCode]).toEqual([200, 200])
    expect([a!.json().version, b!.json().version].sort()).toEqual([exam.version + 1, exam.version + 2])
    const read = (await c.send('GET', `/clinical/exams/${exam.id}`)).json()
    expect(read.amendments).toBe(2)
    expect(read.diagnoses.map((d: Json) => d.code).sort()).toEqual(['H25', 'H40.11', 'H52.1'])
    const history = (await c.send('GET', `/clinical/exams/${exam.id}/history`)).json().data
    expect(
      history
        .filter((v: Json) => v.action === 'amended')
        .map((v: Json) => v.reason)
        .sort(),
    ).toEqual(['primera', 'segunda'])
  })

  it('are for signed exams only', async () => {
    const exam = await c.exam()
    const res = await c.send('POST', `/clinical/exams/${exam.id}/amendments`, {
      reason: 'x',
      add: { iop: [FINDINGS.iop] },
    })
    expect(res.statusCode).toBe(400)
  })
})

describe('prescriptions', () => {
  it('are issued from signed exams only, in minus-cylinder form, valid 2 years for spectacles', async () => {
    const draft = await c.exam()
    const lenses = [
      { eye: 'right', sphere: -1.5, cylinder: 0.5, axis: 170, add: 1.5 },
      { eye: 'left', sphere: -1.25 },
    ]
    const early = await c.send('POST', `/clinical/exams/${draft.id}/prescriptions`, {
      type: 'spectacles',
      lenses,
    })
    expect(early.statusCode).toBe(409)
    expect(early.json().code).toBe('exam_not_signed')

    const { exam } = await signedExam()
    const res = await c.send('POST', `/clinical/exams/${exam.id}/prescriptions`, {
      type: 'spectacles',
      lenses,
    })
    expect(res.statusCode).toBe(201)
    const p = res.json()
    expect(res.headers.location).toBe(`/clinical/prescriptions/${p.id}`)
    expect(p.lenses[0]).toMatchObject({ sphere: -1, cylinder: -0.5, axis: 80, add: 1.5 })
    expect(p.lenses[1]).toMatchObject({ sphere: -1.25, cylinder: 0, axis: null })
    const years = Number(p.valid_until.slice(0, 4)) - Number(p.issued_at.slice(0, 4))
    expect(years).toBe(2)
    expect((await c.send('GET', `/clinical/prescriptions/${p.id}`)).json()).toEqual(p)
    expect((await c.send('GET', `/clinical/exams/${exam.id}`)).json().prescriptions).toEqual([p])
    const other = companyOf(h)
    expect((await other.send('GET', `/clinical/prescriptions/${p.id}`)).statusCode).toBe(404)

    const twoRight = await c.send('POST', `/clinical/exams/${exam.id}/prescriptions`, {
      type: 'contact_lenses',
      lenses: [lenses[1], lenses[1]],
    })
    expect(twoRight.statusCode).toBe(400)
    // valid_until in the past is refused; contact lenses default to one year.
    const past = await c.send('POST', `/clinical/exams/${exam.id}/prescriptions`, {
      type: 'spectacles',
      lenses,
      valid_until: '2020-01-01',
    })
    expect([past.statusCode, past.json().errors]).toEqual([
      400,
      [{ path: '/valid_until', message: 'must not be in the past' }],
    ])
  })
})

describe('trends', () => {
  it('answer live measurements of signed exams only, oldest first, per eye', async () => {
    const patient = c.newPatient()
    const made: string[] = []
    for (const [i, day] of ['2024-03-01', '2022-05-10', '2025-01-20'].entries()) {
      const exam = await c.exam({ patient_id: patient, performed_at: `${day}T09:00:00Z` })
      for (const [eye, mmhg] of [
        ['right', 20 + i],
        ['left', 10 + i],
      ] as const)
        await c.send('POST', `/clinical/exams/${exam.id}/iop`, {
          eye,
          mmhg,
          method: 'goldmann',
          measured_at: `${day}T09:30:00Z`,
        })
      made.push(exam.id)
    }
    // The 2024 exam signed, then amended to supersede its right-eye pressure; the 2025 one left a draft.
    for (const id of made.slice(0, 2)) await c.send('POST', `/clinical/exams/${id}/sign`)
    const first = (await c.send('GET', `/clinical/exams/${made[0]}`)).json()
    const right = first.iop.find((f: Json) => f.eye === 'right')
    await c.send('POST', `/clinical/exams/${made[0]}/amendments`, {
      reason: 'tonometro sin calibrar',
      add: { iop: [{ eye: 'right', mmhg: 19, method: 'icare', measured_at: '2024-03-01T10:00:00Z' }] },
      remove: [right.id],
    })

    const res = await c.send('GET', `/clinical/patients/${patient}/measurements?type=iop&eye=right`)
    expect(res.statusCode).toBe(200)
    expect(res.json()).toEqual({
      data: [
        expect.objectContaining({ mmhg: 21, exam_id: made[1], performed_at: '2022-05-10T09:00:00.000Z' }),
        expect.objectContaining({ mmhg: 19, method: 'icare', measured_at: '2024-03-01T10:00:00.000Z' }),
      ],
      meta: { total: 2, limit: 500 },
    })
    const goldmann = await c.send('GET', `/clinical/patients/${patient}/measurements?type=iop&kind=goldmann`)
    expect(goldmann.json().data.map((m: Json) => m.mmhg)).toEqual([21, 11, 10])
    const since = await c.send(
      'GET',
      `/clinical/patients/${patient}/measurements?type=iop&eye=left&from=2023-01-01T00:00:00Z`,
    )
    expect(since.json().data.map((m: Json) => m.mmhg)).toEqual([10])
    // Another company's patient is no patient; one without signed exams has an empty trend.
    const other = companyOf(h)
    const foreign = await other.send('GET', `/clinical/patients/${patient}/measurements`)
    expect([foreign.statusCode, foreign.json().code]).toEqual([404, 'not_found'])
    const hidden = companyOf(h, { companyId: c.principal.companyId, allowedCenters: ['ALM2'] })
    expect((await hidden.send('GET', `/clinical/patients/${patient}/measurements`)).statusCode).toBe(404)
    const none = await other.send('GET', `/clinical/patients/${other.newPatient()}/measurements`)
    expect(none.json()).toEqual({ data: [], meta: { total: 0, limit: 500 } })
  })
})

describe('FHIR', () => {
  it('answers a FHIR R4 Bundle both validators accept, for a draft and a signed, amended exam', async () => {
    const { exam, ids } = await signedExam()
    await c.send('POST', `/clinical/exams/${exam.id}/amendments`, {
      reason: 'añade agudeza',
      add: {
        visual_acuity: [
          { eye: 'left', kind: 'uncorrected', value: 'LP', notation: 'qualitative' },
          { eye: 'both', kind: 'pinhole', value: '76', notation: 'etdrs_letters' },
        ],
        refraction: [
          { eye: 'right', kind: 'cycloplegic', sphere: 1.25, add: 2, prism: { amount: 1, base: 'in' } },
        ],
      },
    })
    await c.send('POST', `/clinical/exams/${exam.id}/prescriptions`, {
      type: 'contact_lenses',
      lenses: [
        {
          eye: 'right',
          sphere: -2,
          cylinder: -0.75,
          axis: 180,
          base_curve_mm: 8.6,
          diameter_mm: 14.2,
          brand: 'Marca',
        },
      ],
    })
    const draft = await c.exam({ chief_complaint: 'revision' })
    await c.send('POST', `/clinical/exams/${draft.id}/iop`, FINDINGS.iop)
    const bundles: Json[] = []
    for (const id of [exam.id, draft.id]) {
      const res = await c.send('GET', `/clinical/exams/${id}`, undefined, { accept: 'application/fhir+json' })
      expect(res.statusCode).toBe(200)
      expect(res.headers['content-type']).toContain('application/fhir+json')
      const bundle = JSON.parse(res.body)
      expect(bundle).toMatchObject({ resourceType: 'Bundle', type: 'collection' })
      expectValidBundle(bundle)
      bundles.push(bundle)
    }
    const [bundle] = bundles as [Json]
    const types = bundle.entry.map((e: Json) => e.resource.resourceType)
    expect(types.filter((t: string) => t === 'Encounter')).toHaveLength(1)
    expect(types.filter((t: string) => t === 'Condition')).toHaveLength(1)
    expect(types.filter((t: string) => t === 'VisionPrescription')).toHaveLength(1)
    // The right-eye IOP: the right eye's code, as the value set has it (this test once asserted the
    // left eye's code here, pinning the swap it should have caught).
    const iop = bundle.entry.find((e: Json) => e.resource.id === ids.iop).resource
    expect(iop).toMatchObject({
      valueQuantity: { value: 17.5, system: 'http://unitsofmeasure.org', code: 'mm[Hg]' },
      method: { text: 'goldmann' },
      status: 'final',
    })
    expect(iop.bodySite).toEqual({ coding: [eyeSite('right')] })
    const acuity = bundle.entry.find((e: Json) => e.resource.id === ids['visual-acuity']).resource
    expect(acuity).toMatchObject({ valueQuantity: { value: 0.18, unit: 'logMAR' }, status: 'final' })
    expect(acuity.component[0].valueString).toBe('6/9')
    const refraction = bundle.entry.find((e: Json) => e.resource.id === ids.refraction).resource
    expect(refraction.bodySite).toEqual({ coding: [eyeSite('left')] })
    // What the amendment added is `amended`; the draft's IOP `preliminary`.
    const added = bundle.entry.filter((e: Json) => e.resource.status === 'amended')
    expect(added).toHaveLength(3)
    expect(bundles[1]!.entry.filter((e: Json) => e.resource.resourceType === 'Observation')).toEqual([
      expect.objectContaining({ resource: expect.objectContaining({ status: 'preliminary' }) }),
    ])
    // A plain JSON Accept (or none) is the exam itself.
    const json = await c.send('GET', `/clinical/exams/${exam.id}`, undefined, { accept: 'application/json' })
    expect(json.json().id).toBe(exam.id)
  })
})
