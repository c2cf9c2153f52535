import { companyOf, startApp, type Company, type Harness } from '../helpers'

/**
 * Who may read a patient's trend (issue 40; DESIGN 2: a center-limited token sees the patients of
 * its centers, lists filter to its centers). The patient is the gate, by their home center; the
 * measurements are a list, filtered to the centers the caller may see.
 */

let h: Harness
let c: Company
beforeAll(async () => {
  h = await startApp()
  c = companyOf(h)
})
afterAll(() => h.close())

type Json = Record<string, any> // eslint-disable-line @typescript-eslint/no-explicit-any

/** A signed exam at `center` with one right-eye IOP of `mmhg`. */
async function measured(patient: string, center: string, mmhg: number, day: string) {
  const exam = await c.exam({ patient_id: patient, codalmacen: center, performed_at: `${day}T09:00:00Z` })
  const iop = await c.send('POST', `/clinical/exams/${exam.id}/iop`, {
    eye: 'right',
    mmhg,
    method: 'goldmann',
    measured_at: `${day}T09:30:00Z`,
  })
  expect(iop.statusCode).toBe(201)
  expect((await c.send('POST', `/clinical/exams/${exam.id}/sign`)).statusCode).toBe(200)
}
const trend = (company: Company, patient: string, query = '') =>
  company.send('GET', `/clinical/patients/${patient}/measurements?type=iop${query}`)
const limitedTo = (centers: string[]) =>
  companyOf(h, { companyId: c.principal.companyId, allowedCenters: centers })

describe('a trend read with a center-limited token', () => {
  it('is 404 for a patient whose home center is hidden, even with exams at a visible center', async () => {
    const patient = c.newPatient('ALM2')
    await measured(patient, 'ALM1', 18, '2025-01-10')
    await measured(patient, 'ALM2', 19, '2025-02-10')
    const alm1 = limitedTo(['ALM1'])
    const res = await trend(alm1, patient)
    expect([res.statusCode, res.json().code]).toEqual([404, 'not_found'])
    // Naming the visible center changes nothing; naming the hidden one is 403 as everywhere.
    expect((await trend(alm1, patient, '&codalmacen=ALM1')).statusCode).toBe(404)
    expect((await trend(alm1, patient, '&codalmacen=ALM2')).json().code).toBe('center_forbidden')
    // The company-wide token sees both; a token of the patient's home center sees its own exam's.
    expect((await trend(c, patient)).json().data.map((m: Json) => m.mmhg)).toEqual([18, 19])
    // Asking for another center than the patient's is 404, as on every read of one record; asking for
    // theirs narrows the list to that center's measurements.
    expect((await trend(c, patient, '&codalmacen=ALM1')).statusCode).toBe(404)
    expect((await trend(c, patient, '&codalmacen=ALM2')).json().data.map((m: Json) => m.mmhg)).toEqual([19])
    expect((await trend(limitedTo(['ALM2']), patient)).json()).toEqual({
      data: [expect.objectContaining({ mmhg: 19 })],
      meta: { total: 1, limit: 500 },
    })
  })

  it('shows a visible patient only the measurements taken at its centers (the reverse case)', async () => {
    const patient = c.newPatient('ALM1')
    await measured(patient, 'ALM2', 22, '2025-03-10')
    const alm1 = limitedTo(['ALM1'])
    // Every exam at the hidden center: the patient is visible, the list is empty.
    expect((await trend(alm1, patient)).json()).toEqual({ data: [], meta: { total: 0, limit: 500 } })
    await measured(patient, 'ALM1', 20, '2025-04-10')
    const res = await trend(alm1, patient)
    expect(res.statusCode).toBe(200)
    expect(res.json()).toEqual({
      data: [expect.objectContaining({ mmhg: 20, performed_at: '2025-04-10T09:00:00.000Z' })],
      meta: { total: 1, limit: 500 },
    })
    // A token of both centers sees both, oldest first.
    expect((await trend(limitedTo(['ALM1', 'ALM2']), patient)).json().data.map((m: Json) => m.mmhg)).toEqual([
      22, 20,
    ])
  })

  it('is 404 for a patient with no home center, and for another company’s patient', async () => {
    const homeless = c.newPatient(null)
    await measured(homeless, 'ALM1', 17, '2025-05-10')
    expect((await trend(limitedTo(['ALM1']), homeless)).statusCode).toBe(404)
    expect((await trend(c, homeless)).json().data).toHaveLength(1)
    const other = companyOf(h, { allowedCenters: ['ALM1'] })
    expect((await trend(other, homeless)).statusCode).toBe(404)
  })

  it('answers 503 when the patients service cannot say, never the measurements', async () => {
    const patient = c.newPatient('ALM1')
    await measured(patient, 'ALM1', 16, '2025-06-10')
    h.far.mode = 'error'
    try {
      const res = await trend(limitedTo(['ALM1']), patient)
      expect([res.statusCode, res.json().code]).toEqual([503, 'upstream_unavailable'])
      // A company-wide token's non-empty trend needs no lookup (its patients were confirmed).
      expect((await trend(c, patient)).statusCode).toBe(200)
    } finally {
      h.far.mode = 'ok'
    }
  })
})
