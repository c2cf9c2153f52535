import Client from 'fhir-kit-client'
import type { Bundle, CapabilityStatement, OperationOutcome, Resource } from '@medplum/fhirtypes'
import { FHIR_TYPES, PATIENT_COMPARTMENT } from '@clinic/platform'
import { fhirProblems } from '@clinic/platform/testing'
import { SAMPLE_PNG, call, extraGateway, makeTenant, stack, tokenFor, type Tenant } from '../src/client'

/**
 * FHIR R4 from outside (DESIGN.md section 19), as integrators use it: a FHIR client library from
 * npm (fhir-kit-client) reads, searches and follows `next`; every resource and Bundle answered
 * passes two third-party validators (HL7's JSON schema, @medplum/core's StructureDefinitions) with
 * nothing to report; two companies and a center-limited token see nothing of each other on any
 * type, on search, read and `$everything`; every error on /fhir is an OperationOutcome.
 */
jest.setTimeout(180_000)

type Seeded = Record<string, Set<string>>
let a: Tenant
let b: Tenant
/** Ids of each type company A's records map to, in center ALM1 and ALM2. */
const seeded: Record<'ALM1' | 'ALM2', Seeded> = { ALM1: {}, ALM2: {} }
let patientOf: Record<'ALM1' | 'ALM2', string>

const fhirBase = (base = stack().api) => `${base}/fhir/R4`
const client = (token?: string) =>
  new Client({ baseUrl: fhirBase(), customHeaders: token ? { 'X-service-Token': token } : {} })
const post = async (t: Tenant, path: string, body: unknown) => {
  const res = await call('POST', path, { token: t.token, body })
  if (res.status >= 300) throw new Error(`${path}: ${res.status} ${JSON.stringify(res.body)}`)
  return res.body
}

/** A company's records of every kind in one center, made through the native API. */
async function seed(t: Tenant, center: 'ALM1' | 'ALM2', practitioner: string) {
  const patient = await post(t, '/patients', {
    first_name: 'Lucía',
    last_name: `Fhir${center}`,
    birth_date: '2015-04-02',
    codalmacen: center,
    phone: '+34600111222',
    requires_legal_guardian: true,
    guardian: { name: 'Marta García', relationship: 'mother', phone: '+34600111333' },
  })
  const day = new Date(Date.now() + 3 * 864e5).toISOString().slice(0, 10)
  await post(t, '/appointments', {
    patient_id: patient.id,
    codalmacen: center,
    practitioner,
    // One practitioner at both centers: ALM1 in the morning, ALM2 in the afternoon (Madrid time).
    starts_at: `${day}T${center === 'ALM1' ? '09' : '15'}:00:00Z`,
    ends_at: `${day}T${center === 'ALM1' ? '09' : '15'}:20:00Z`,
  })
  const exam = await post(t, `/clinical/exams?codalmacen=${center}`, { patient_id: patient.id, practitioner })
  await post(t, `/clinical/exams/${exam.id}/iop`, {
    eye: 'right',
    mmhg: 21,
    method: 'goldmann',
    measured_at: new Date().toISOString(),
  })
  await post(t, `/clinical/exams/${exam.id}/diagnoses`, { code: 'H40.11', system: 'icd10cm', eye: 'both' })
  await post(t, `/clinical/exams/${exam.id}/sign`, undefined)
  await post(t, `/clinical/exams/${exam.id}/prescriptions`, {
    type: 'spectacles',
    lenses: [
      { eye: 'right', sphere: -1.5 },
      { eye: 'left', sphere: -1.25 },
    ],
  })
  await post(t, '/documents', {
    patient_id: patient.id,
    category: 'imaging',
    title: 'Retinografía',
    file: SAMPLE_PNG,
  })
  await post(t, '/consents', {
    patient_id: patient.id,
    template_key: 'fhir-e2e',
    send: false,
    codalmacen: center,
  })
  await post(t, '/comms/send', { patient_id: patient.id, body: 'Recordatorio de su cita' })
  return patient.id as string
}

/** Every page of a search, followed through `next` with the client library. */
async function everyPage(c: Client, type: string, params: Record<string, string> = {}): Promise<Bundle[]> {
  const pages: Bundle[] = [(await c.search({ resourceType: type, searchParams: params })) as Bundle]
  for (let page = pages[0]!; page.link?.some((l) => l.relation === 'next');) {
    page = (await c.nextPage({ bundle: page } as never)) as Bundle
    pages.push(page)
  }
  return pages
}
const idsOf = (pages: Bundle[]) =>
  pages.flatMap((p) => (p.entry ?? []).map((e) => `${e.resource!.resourceType}/${e.resource!.id}`))

beforeAll(async () => {
  ;[a, b] = await Promise.all([makeTenant(['ALM1', 'ALM2']), makeTenant(['ALM1', 'ALM2'])])
  // Practitioner ids are each company's own slugs: two companies may both have a `dr-fhir`.
  for (const [t, practitioner] of [
    [a, 'dr-fhir'],
    [b, 'dr-fhir-b'],
  ] as const) {
    await post(t, '/practitioners', {
      id: practitioner,
      name: 'Dr. Fhir',
      slot_minutes: 20,
      working_hours: [1, 2, 3, 4, 5, 6, 7].flatMap((weekday) => [
        { codalmacen: 'ALM1', weekday, start: '08:00', end: '14:00' },
        { codalmacen: 'ALM2', weekday, start: '14:00', end: '20:00' },
      ]),
    })
    await post(t, '/consents/templates', {
      key: 'fhir-e2e',
      language: 'es',
      title: 'Prueba',
      body: 'Autorizo.',
    })
  }
  patientOf = {
    ALM1: await seed(a, 'ALM1', 'dr-fhir'),
    ALM2: await seed(a, 'ALM2', 'dr-fhir'),
  }
  await seed(b, 'ALM1', 'dr-fhir-b')
  // What A's ALM1-limited and ALM2-limited tokens see of A: the ids of each type, per center.
  for (const center of ['ALM1', 'ALM2'] as const) {
    const limited = client(await tokenFor(a, '--centers', center))
    for (const type of FHIR_TYPES) {
      if (type === 'Binary') continue
      seeded[center][type] = new Set(idsOf(await everyPage(limited, type, { _count: '1000' })))
    }
  }
})

describe('FHIR R4 through the gateway', () => {
  it('metadata: a CapabilityStatement without a token, listing every type with its search parameters', async () => {
    const res = await call('GET', '/fhir/R4/metadata')
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toContain('application/fhir+json')
    expect(res.headers.get('x-service-version')).toBeTruthy()
    const cs = res.body as CapabilityStatement
    expect(fhirProblems(cs)).toEqual([])
    expect(cs.fhirVersion).toBe('4.0.1')
    expect(cs.rest![0]!.resource!.map((r) => r.type).sort()).toEqual([...FHIR_TYPES].sort())
    const appointment = cs.rest![0]!.resource!.find((r) => r.type === 'Appointment')!
    expect(appointment.searchParam!.map((p) => p.name)).toEqual(
      expect.arrayContaining([
        'patient',
        'practitioner',
        'date',
        'status',
        'location',
        '_id',
        '_lastUpdated',
      ]),
    )
  })

  it('every type: searched with the client library, each page and resource valid (0 problems)', async () => {
    // A token of its own: paging two at a time is many requests, counted per token (600 a minute).
    const c = client(await tokenFor(a))
    for (const type of FHIR_TYPES) {
      if (type === 'Binary') continue
      // The trail grows with every request of the suite: it pages fifty at a time.
      const pages = await everyPage(c, type, { _count: type === 'AuditEvent' ? '50' : '2' })
      const ids = idsOf(pages)
      expect(new Set(ids).size).toBe(ids.length) // no entry twice across pages
      // The trail grows as the pages are read (each read is on it): those come last, in the walk too.
      if (type === 'AuditEvent') expect(ids.length).toBeGreaterThanOrEqual(pages[0]!.total!)
      else expect(pages[0]!.total).toBe(ids.length)
      for (const page of pages) {
        expect(page.type).toBe('searchset')
        expect(fhirProblems(page as never)).toEqual([])
      }
      if (type !== 'Slot') expect([type, ids.length > 0]).toEqual([type, true])
    }
  })

  it('reads each resource back by id, and a Patient search by family finds the patient', async () => {
    const c = client(a.token)
    for (const ref of [
      ...seeded.ALM1.Appointment!,
      ...seeded.ALM1.Observation!,
      ...seeded.ALM1.Consent!,
    ].slice(0, 6)) {
      const [resourceType, id] = ref.split('/')
      const r = (await c.read({ resourceType: resourceType!, id: id! })) as Resource
      expect(`${r.resourceType}/${r.id}`).toBe(ref)
      expect(fhirProblems(r as never)).toEqual([])
    }
    const found = (await c.search({
      resourceType: 'Patient',
      searchParams: { family: 'fhiralm1' },
    })) as Bundle
    expect(found.entry!.map((e) => e.resource!.id)).toEqual([patientOf.ALM1])
    const patient = found.entry![0]!.resource as { contact?: Array<{ name?: { text?: string } }> }
    expect(patient.contact?.[0]?.name?.text).toBe('Marta García')
  })

  it('another company sees nothing of A: no id of A in its searches, each of A’s ids 404 OperationOutcome', async () => {
    const c = client(b.token)
    const ofA = new Set([...Object.values(seeded.ALM1), ...Object.values(seeded.ALM2)].flatMap((s) => [...s]))
    for (const type of FHIR_TYPES) {
      if (type === 'Binary' || type === 'Organization' || type === 'Location') continue
      const ids = idsOf(await everyPage(c, type, { _count: '1000' }))
      expect(ids.filter((id) => ofA.has(id))).toEqual([])
    }
    // Every id of A but its centers' (each company has an ALM1) and its Organization (ids differ).
    const binaries = [...seeded.ALM1.DocumentReference!].map((ref) =>
      ref.replace('DocumentReference/', 'Binary/'),
    )
    for (const ref of [...ofA, ...binaries]) {
      if (/^(Organization|Location)\//.test(ref)) continue
      const res = await call('GET', `/fhir/R4/${ref}`, { token: b.token })
      expect([ref, res.status, (res.body as OperationOutcome).resourceType]).toEqual([
        ref,
        404,
        'OperationOutcome',
      ])
    }
  })

  it('a token limited to ALM2 sees nothing of ALM1, on search, read and $everything', async () => {
    const alm2 = await tokenFor(a, '--centers', 'ALM2')
    const onlyAlm1 = (type: string) =>
      [...(seeded.ALM1[type] ?? [])].filter((id) => !(seeded.ALM2[type] ?? new Set()).has(id))
    for (const type of FHIR_TYPES) {
      if (type === 'Binary' || type === 'Organization') continue
      for (const ref of onlyAlm1(type)) {
        const res = await call('GET', `/fhir/R4/${ref}`, { token: alm2 })
        expect([ref, res.status]).toEqual([ref, 404])
      }
    }
    expect(onlyAlm1('Patient')).toEqual([`Patient/${patientOf.ALM1}`])
    // What the company's full token finds about the ALM1 patient, the ALM2 token never finds.
    const full = client(a.token)
    for (const type of PATIENT_COMPARTMENT) {
      const about = idsOf(await everyPage(full, type, { patient: `Patient/${patientOf.ALM1}` }))
      if (type !== 'VisionPrescription' || about.length)
        expect([type, about.length > 0]).toEqual([type, true])
      expect([type, about.filter((id) => seeded.ALM2[type]!.has(id))]).toEqual([type, []])
    }
    const everything = await call('GET', `/fhir/R4/Patient/${patientOf.ALM1}/$everything`, { token: alm2 })
    expect([everything.status, everything.body.resourceType]).toEqual([404, 'OperationOutcome'])
  })

  it('$everything: the patient and every resource about them, paged, none twice, none of the other patient', async () => {
    const c = client(a.token)
    const first = (await c.operation({
      resourceType: 'Patient',
      id: patientOf.ALM1,
      name: '$everything',
      method: 'GET',
      input: { _count: '2' },
    })) as Bundle
    const pages = [first]
    for (let p = first; p.link?.some((l) => l.relation === 'next');) {
      p = (await c.nextPage({ bundle: p } as never)) as Bundle
      pages.push(p)
    }
    const ids = idsOf(pages)
    for (const page of pages) expect(fhirProblems(page as never)).toEqual([])
    expect(new Set(ids).size).toBe(ids.length)
    expect(ids[0]).toBe(`Patient/${patientOf.ALM1}`)
    expect(first.total).toBe(ids.length)
    const types = new Set(ids.map((id) => id.split('/')[0]))
    for (const type of [
      'Appointment',
      'Encounter',
      'Observation',
      'DocumentReference',
      'Consent',
      'Communication',
    ])
      expect([type, types.has(type)]).toEqual([type, true])
    const other = new Set(Object.values(seeded.ALM2).flatMap((s) => [...s]))
    expect(
      ids.filter((id) => other.has(id) && !/^(Organization|Location|Practitioner|Schedule)/.test(id)),
    ).toEqual([])
  })

  it('every error on /fhir is an OperationOutcome with the same status: 400, 401, 403, 404, 429', async () => {
    const expectOutcome = (res: { status: number; headers: Headers; body: unknown }, status: number) => {
      expect(res.status).toBe(status)
      expect(res.headers.get('content-type')).toContain('application/fhir+json')
      expect(res.headers.get('x-service-version')).toBeTruthy()
      expect((res.body as OperationOutcome).resourceType).toBe('OperationOutcome')
      expect(fhirProblems(res.body as never)).toEqual([])
    }
    const unknown = await call('GET', '/fhir/R4/Patient?colour=blue', { token: a.token })
    expectOutcome(unknown, 400)
    expect(JSON.stringify(unknown.body)).toContain('colour')
    expectOutcome(await call('GET', '/fhir/R4/Patient'), 401)
    const noPatients = await tokenFor(a, '--scopes', 'appointments:read')
    expectOutcome(await call('GET', '/fhir/R4/Patient', { token: noPatients }), 403)
    expectOutcome(await call('GET', '/fhir/R4/Nonsense/1', { token: a.token }), 404)
    expectOutcome(await call('GET', `/fhir/R4/Patient/${crypto.randomUUID()}`, { token: a.token }), 404)
    const limited = await extraGateway({ RATE_LIMIT_PER_MINUTE: '1' })
    try {
      await call('GET', '/fhir/R4/Organization', { token: a.token, base: limited.api })
      expectOutcome(await call('GET', '/fhir/R4/Organization', { token: a.token, base: limited.api }), 429)
    } finally {
      await limited.stop()
    }
  })
})
