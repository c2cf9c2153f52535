import { fhirProblems, walkFhirSearch } from '@clinic/platform/testing'
import { NATIONAL_ID_SYSTEM } from '../../src/domain/fhir-patient'
import { createPatient, newCompany, startApp, type Client, type Harness } from '../helpers'

/**
 * FHIR R4 `Patient` read and search (DESIGN.md section 19): every declared parameter, paging by
 * `next` links, the company and the token's centers, errors as OperationOutcomes, and every answer
 * through the two third-party validators with nothing to report.
 */
let h: Harness
beforeAll(async () => {
  h = await startApp()
})
afterAll(() => h.close())

type Bundle = {
  resourceType: string
  total: number
  link: Array<{ relation: string; url: string }>
  entry?: Array<{ fullUrl: string; resource: { id: string; resourceType: string } & Record<string, unknown> }>
}
async function search(c: Client, query: string): Promise<Bundle> {
  const res = await c.get(`/fhir/R4/Patient${query}`)
  if (res.statusCode !== 200) throw new Error(`${query}: ${res.statusCode} ${res.body}`)
  expect(res.headers['content-type']).toContain('application/fhir+json')
  const bundle = res.json() as Bundle
  expect(fhirProblems(bundle as never)).toEqual([])
  return bundle
}
const ids = (b: Bundle) => (b.entry ?? []).map((e) => e.resource.id)

/** Every page through `next` (the relative base when no gateway sends one): the ids in order. */
const walk = async (c: Client, query: string) =>
  (await walkFhirSearch((url) => c.get(url), `/fhir/R4/Patient${query}`)).ids

describe('FHIR Patient', () => {
  test('read: the patient as FHIR, guardian as contact, ETag the version; valid', async () => {
    const c = newCompany(h.app)
    const p = await createPatient(c, {
      first_name: 'Lucía',
      last_name: 'Núñez',
      birth_date: '2015-04-02',
      sex: 'female',
      national_id: '12345678Z',
      phone: '+34600111222',
      codalmacen: 'ALM1',
      requires_legal_guardian: true,
      guardian: { name: 'Marta García', relationship: 'mother', phone: '+34600111333' },
      address: { line1: 'Calle Mayor 1', city: 'Madrid', postal_code: '28001', country: 'ES' },
    })
    const res = await c.get(`/fhir/R4/Patient/${p.id}`)
    expect(res.statusCode).toBe(200)
    expect(res.headers.etag).toBe('W/"1"')
    const r = res.json()
    expect(fhirProblems(r)).toEqual([])
    expect(r).toMatchObject({
      resourceType: 'Patient',
      id: p.id,
      meta: { versionId: '1', lastUpdated: p.updated_at },
      identifier: [{ system: NATIONAL_ID_SYSTEM, value: '12345678Z' }],
      name: [{ family: 'Núñez', given: ['Lucía'] }],
      gender: 'female',
      birthDate: '2015-04-02',
      telecom: [{ system: 'phone', value: '+34600111222' }],
      address: [{ line: ['Calle Mayor 1'], city: 'Madrid', postalCode: '28001', country: 'ES' }],
      contact: [
        {
          relationship: [{ text: 'mother' }],
          name: { text: 'Marta García' },
          telecom: [{ system: 'phone', value: '+34600111333' }],
        },
      ],
      managingOrganization: { reference: `Organization/${c.principal.companyId}` },
    })
  })

  test('search: identifier, name, family, birthdate, _id, _lastUpdated; alternatives OR, parameters AND', async () => {
    const c = newCompany(h.app)
    const ana = await createPatient(c, {
      first_name: 'Ana',
      last_name: 'Ruiz',
      birth_date: '1990-05-10',
      national_id: 'X1',
    })
    const anabel = await createPatient(c, {
      first_name: 'Anabel',
      last_name: 'Sanz',
      birth_date: '1990-06-01',
    })
    const luis = await createPatient(c, { first_name: 'Luis', last_name: 'Ruiz', birth_date: '2001-01-01' })
    const sorted = (xs: string[]) => [...xs].sort()
    expect(ids(await search(c, `?identifier=X1`))).toEqual([ana.id])
    expect(ids(await search(c, `?identifier=${encodeURIComponent(`${NATIONAL_ID_SYSTEM}|X1`)}`))).toEqual([
      ana.id,
    ])
    expect(ids(await search(c, `?identifier=${encodeURIComponent('http://other|X1')}`))).toEqual([])
    expect(sorted(ids(await search(c, '?name=ana')))).toEqual(sorted([ana.id, anabel.id]))
    expect(sorted(ids(await search(c, '?family=RUIZ')))).toEqual(sorted([ana.id, luis.id]))
    expect(ids(await search(c, '?family=ruiz&name=an'))).toEqual([ana.id])
    expect(sorted(ids(await search(c, '?family=sanz,ruiz&birthdate=1990')))).toEqual(
      sorted([ana.id, anabel.id]),
    )
    expect(ids(await search(c, '?birthdate=ge2000-01-01'))).toEqual([luis.id])
    expect(ids(await search(c, '?birthdate=1990-05-10'))).toEqual([ana.id])
    expect(sorted(ids(await search(c, `?_id=${ana.id},${luis.id}`)))).toEqual(sorted([ana.id, luis.id]))
    expect(ids(await search(c, '?_id=not-a-uuid'))).toEqual([])
    const t = luis.updated_at as string
    expect(ids(await search(c, `?_lastUpdated=ge${encodeURIComponent(t)}`))).toContain(luis.id)
    expect(ids(await search(c, `?_lastUpdated=lt${encodeURIComponent(ana.updated_at as string)}`))).toEqual(
      [],
    )
  })

  test('paging: next links walk every patient once, in either order; total exact; _count=0 the total only', async () => {
    const c = newCompany(h.app)
    const made: string[] = []
    for (let i = 0; i < 7; i++) made.push((await createPatient(c)).id)
    const asc = await walk(c, '?_count=3')
    expect(asc).toEqual(made) // made one after another: last updated in that order
    expect(await walk(c, '?_count=2&_sort=-_lastUpdated')).toEqual([...made].reverse())
    const first = await search(c, '?_count=3')
    expect(first.total).toBe(7)
    const none = await search(c, '?_count=0')
    expect([none.total, none.entry ?? []]).toEqual([7, []])
    const forged = await c.get('/fhir/R4/Patient?_cursor=bm9wZQ')
    expect([forged.statusCode, forged.json().resourceType]).toEqual([400, 'OperationOutcome'])
  })

  test('another company and another center see nothing: 404 OperationOutcome, empty searches', async () => {
    const c = newCompany(h.app)
    const alm1 = await createPatient(c, { codalmacen: 'ALM1', last_name: 'Centro' })
    const alm2 = await createPatient(c, { codalmacen: 'ALM2', last_name: 'Centro' })
    const other = newCompany(h.app)
    const read = await other.get(`/fhir/R4/Patient/${alm1.id}`)
    expect(read.statusCode).toBe(404)
    expect(read.headers['content-type']).toContain('application/fhir+json')
    expect(fhirProblems(read.json())).toEqual([])
    expect(ids(await search(other, '?family=centro'))).toEqual([])
    const limited = newCompany(h.app, { companyId: c.principal.companyId, allowedCenters: ['ALM2'] })
    expect((await limited.get(`/fhir/R4/Patient/${alm1.id}`)).statusCode).toBe(404)
    expect((await limited.get(`/fhir/R4/Patient/${alm2.id}`)).statusCode).toBe(200)
    // An id that is no UUID (a valid FHIR id all the same) names no patient: 404, never a database error.
    expect((await c.get('/fhir/R4/Patient/abc-1.2')).statusCode).toBe(404)
    expect(ids(await search(limited, '?family=centro'))).toEqual([alm2.id])
    expect((await search(limited, '?_count=0')).total).toBe(1)
  })

  test('an unknown parameter, a modifier or a bad value is a 400 OperationOutcome naming it', async () => {
    const c = newCompany(h.app)
    for (const q of [
      'colour=blue',
      'name:exact=Ana',
      'birthdate=yesterday',
      '_count=5000',
      'patient=Patient/x',
    ]) {
      const res = await c.get(`/fhir/R4/Patient?${q}`)
      expect([q, res.statusCode]).toEqual([q, 400])
      const o = res.json()
      expect(o.resourceType).toBe('OperationOutcome')
      expect(o.issue[0].details.text).toContain(q.split('=')[0])
      expect(fhirProblems(o)).toEqual([])
    }
  })
})
