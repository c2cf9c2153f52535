import { Amqp, createDb, createLogger, migrate } from '@clinic/platform'
import {
  gatewayHeaders,
  testAssertionKeys,
  testPrincipal,
  testServices,
  testSigner,
} from '@clinic/platform/testing'
import type { Principal } from '@clinic/platform'
import type { Knex } from 'knex'
import { buildApp, type App } from '../../src/app'
import { APP_ROLE, SCHEMA, migrations } from '../../src/db/migrations'
import { directoryFarEnd } from '../helpers'

/**
 * `GET /internal/clinical/exams/:id`: documents resolves an exam of its caller (a document's or a
 * consent's `exam_id`) with its own signed assertion; the caller's company and centers apply.
 */
let app: App
let knex: Knex
let far: Awaited<ReturnType<typeof directoryFarEnd>>
beforeAll(async () => {
  const url = process.env.DATABASE_URL!
  await migrate(url, SCHEMA, migrations)
  const logger = createLogger({ service: 'clinical', level: process.env.LOG_LEVEL ?? 'silent' })
  knex = createDb(url, { schema: SCHEMA, role: APP_ROLE, poolMax: 2 })
  far = await directoryFarEnd()
  const signer = testSigner('clinical')
  app = await buildApp({
    logger,
    knex,
    amqp: new Amqp({ url: process.env.AMQP_URL!, log: logger, name: 'clinical-test' }),
    version: '261122.01',
    // What services.json `calls` gives clinical: the gateway's key and documents'.
    assertionKeys: testAssertionKeys(['documents']),
    serviceSigner: signer,
    services: testServices('clinical', far.url),
  })
  await app.ready()
})
afterAll(async () => {
  await app.close()
  await far.close()
  await knex.destroy()
})

const asGateway = async (p: Principal, method: 'GET' | 'POST', url: string, body?: object) =>
  app.inject({
    method,
    url,
    headers: await gatewayHeaders(p, method, url, undefined, undefined, body),
    payload: body,
  })
const asDocuments = async (p: Principal, url: string, signer = testSigner('documents')) =>
  app.inject({ method: 'GET', url, headers: await gatewayHeaders(p, 'GET', url, signer) })

async function exam(p: Principal, codalmacen = 'ALM1') {
  const res = await asGateway(p, 'POST', '/clinical/exams', {
    patient_id: far.addPatient(p.companyId),
    practitioner: 'dr-ficticio',
    codalmacen,
    notes: 'notas ficticias',
  })
  expect(res.statusCode).toBe(201)
  return res.json() as { id: string; patient_id: string }
}

describe('GET /internal/clinical/exams/:id', () => {
  it("answers documents with the exam's patient, center and status, nothing of its contents", async () => {
    const p = testPrincipal()
    const e = await exam(p)
    const res = await asDocuments(p, `/internal/clinical/exams/${e.id}`)
    expect(res.statusCode).toBe(200)
    expect(res.json()).toEqual({ id: e.id, patient_id: e.patient_id, codalmacen: 'ALM1', status: 'draft' })
  })

  it("is 404 for another company's exam, an unknown id and a center the caller's token may not use", async () => {
    const p = testPrincipal()
    const e = await exam(p, 'ALM2')
    expect((await asDocuments(testPrincipal(), `/internal/clinical/exams/${e.id}`)).statusCode).toBe(404)
    expect(
      (await asDocuments(p, '/internal/clinical/exams/0190c5a0-0000-7000-8000-00000000beef')).statusCode,
    ).toBe(404)
    const limited = { ...p, allowedCenters: ['ALM1'] }
    expect((await asDocuments(limited, `/internal/clinical/exams/${e.id}`)).statusCode).toBe(404)
  })

  it('takes documents alone: the gateway or another service is refused', async () => {
    const p = testPrincipal()
    const e = await exam(p)
    const url = `/internal/clinical/exams/${e.id}`
    expect((await asDocuments(p, url, testSigner())).statusCode).toBe(401)
    expect((await asDocuments(p, url, testSigner('comms'))).statusCode).toBe(401)
  })
})
