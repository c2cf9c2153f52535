import { randomBytes } from 'node:crypto'
import { createDb, migrate, uuidv7 } from '@clinic/platform'
import type { Knex } from 'knex'
import { base } from '../../src/db/migrations/0001-base'
import { clinicalTables } from '../../src/db/migrations/0002-clinical'
import { diagnosisSystems } from '../../src/db/migrations/0003-diagnosis-systems'
import { APP_ROLE } from '../../src/db/migrations'
import { expectValidBundle } from '../fhir-validator'
import { companyOf, startApp, type Harness } from '../helpers'

/**
 * Migration 0003: `icd10` meant "some ICD-10, edition unstated". Codes WHO ICD-10 has stay `icd10`;
 * codes it cannot have are read as ICD-10-CM, never silently: the system entered stays on the row,
 * in the API and in the FHIR Condition.
 */

type Json = Record<string, any> // eslint-disable-line @typescript-eslint/no-explicit-any
const url = () => process.env.DATABASE_URL!

async function signedExamRow(db: Knex, company: number) {
  const exam = {
    idempresa: company,
    id: uuidv7(),
    patient_id: uuidv7(),
    codalmacen: 'ALM1',
    practitioner: 'dr-ficticio',
    performed_at: '2025-01-10T09:00:00Z',
    status: 'signed',
    signed_at: '2025-01-10T10:00:00Z',
    signed_by: 'test-user',
    version: 3,
  }
  await db('exams').insert(exam)
  return exam
}
async function diagnosisRow(db: Knex, exam: Json, data: Json, kind = 'diagnoses') {
  const id = uuidv7()
  await db('findings').insert({
    idempresa: exam.idempresa,
    id,
    exam_id: exam.id,
    kind,
    eye: kind === 'diagnoses' ? 'right' : 'left',
    data: JSON.stringify(data),
    added_in: 2,
    recorded_by: 'test-user',
    patient_id: exam.patient_id,
    codalmacen: exam.codalmacen,
    signed: true,
  })
  return id
}

describe('migration 0003_diagnosis_systems', () => {
  const schema = `clinical_m0003_${randomBytes(4).toString('hex')}`
  const before = [base(schema, APP_ROLE), clinicalTables(APP_ROLE)]
  let db: Knex
  beforeAll(async () => {
    await migrate(url(), schema, before)
    db = createDb(url(), { schema, poolMax: 1 })
  })
  afterAll(async () => {
    await db.raw(`DROP SCHEMA ${schema} CASCADE`)
    await db.destroy()
  })

  it('keeps the codes WHO ICD-10 has, relabels the others icd10cm saying so, of every company', async () => {
    const a = await signedExamRow(db, 7001)
    const b = await signedExamRow(db, 7002)
    const ids = {
      category: await diagnosisRow(db, a, { code: 'H25', system: 'icd10', status: 'active' }),
      subcategory: await diagnosisRow(db, a, { code: 'H40.1', system: 'icd10', status: 'active' }),
      cm: await diagnosisRow(db, a, { code: 'H40.11', system: 'icd10', status: 'suspected' }),
      placeholder: await diagnosisRow(db, a, { code: 'H40.1X10', system: 'icd10', status: 'active' }),
      snomed: await diagnosisRow(db, a, { code: '23986001', system: 'snomed', status: 'active' }),
      iop: await diagnosisRow(db, a, { mmhg: 17, method: 'goldmann', system: 'icd10' }, 'iop'),
      otherCompany: await diagnosisRow(db, b, { code: 'H35.31', system: 'icd10', status: 'active' }),
    }
    const versionsBefore = await db('exams').select('id', 'version', 'updated_at').orderBy('id')

    expect(await migrate(url(), schema, [...before, diagnosisSystems])).toEqual(['0003_diagnosis_systems'])

    const rows = await db('findings').select('id', 'data')
    const data = (id: string) => rows.find((r) => r.id === id)!.data as Json
    expect(data(ids.category)).toEqual({ code: 'H25', system: 'icd10', status: 'active' })
    expect(data(ids.subcategory)).toEqual({ code: 'H40.1', system: 'icd10', status: 'active' })
    for (const id of [ids.cm, ids.placeholder, ids.otherCompany])
      expect(data(id)).toMatchObject({ system: 'icd10cm', system_as_entered: 'icd10' })
    expect(data(ids.cm)).toEqual({
      code: 'H40.11',
      system: 'icd10cm',
      system_as_entered: 'icd10',
      status: 'suspected',
    })
    expect(data(ids.snomed)).toEqual({ code: '23986001', system: 'snomed', status: 'active' })
    expect(data(ids.iop)).toEqual({ mmhg: 17, method: 'goldmann', system: 'icd10' })
    // The exams are not moved on, and row-level security is forced again.
    expect(await db('exams').select('id', 'version', 'updated_at').orderBy('id')).toEqual(versionsBefore)
    const { rows: forced } = await db.raw(
      `SELECT relforcerowsecurity FROM pg_class WHERE oid = '${schema}.findings'::regclass`,
    )
    expect(forced).toEqual([{ relforcerowsecurity: true }])
  })
})

describe('a relabelled diagnosis as the API and FHIR show it', () => {
  let h: Harness
  beforeAll(async () => {
    h = await startApp()
  })
  afterAll(() => h.close())

  it('shows system_as_entered, and the Condition notes the relabel; both validators accept it', async () => {
    const c = companyOf(h)
    const exam = await c.exam()
    await c.send('POST', `/clinical/exams/${exam.id}/iop`, {
      eye: 'right',
      mmhg: 17,
      method: 'goldmann',
      measured_at: '2025-01-10T09:00:00Z',
    })
    await c.send('POST', `/clinical/exams/${exam.id}/sign`)
    // As 0003 leaves a row entered as `icd10` H40.11 before it (the API no longer takes that).
    const row = await h.owner('exams').where({ id: exam.id }).first()
    const id = await diagnosisRow(h.owner, row, {
      code: 'H40.11',
      system: 'icd10cm',
      system_as_entered: 'icd10',
      display: null,
      status: 'active',
      onset: null,
    })
    const read = (await c.send('GET', `/clinical/exams/${exam.id}`)).json()
    expect(read.diagnoses).toEqual([
      expect.objectContaining({ id, code: 'H40.11', system: 'icd10cm', system_as_entered: 'icd10' }),
    ])
    const fhir = await c.send('GET', `/clinical/exams/${exam.id}`, undefined, {
      accept: 'application/fhir+json',
    })
    const bundle = JSON.parse(fhir.body)
    expectValidBundle(bundle)
    const condition = bundle.entry.find((e: Json) => e.resource.id === id).resource
    expect(condition.code.coding).toEqual([{ system: 'http://hl7.org/fhir/sid/icd-10-cm', code: 'H40.11' }])
    expect(condition.note[0].text).toContain('"icd10"')
  })
})
