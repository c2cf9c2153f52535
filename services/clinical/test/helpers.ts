import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import {
  Amqp,
  ASSERTION_HEADER,
  createDb,
  createLogger,
  migrate,
  uuidv7,
  verifyAssertion,
  type Principal,
} from '@clinic/platform'
import {
  gatewayHeaders,
  internalAnswers,
  testAssertionKeys,
  testPrincipal,
  testServices,
  testSigner,
} from '@clinic/platform/testing'
import type { Knex } from 'knex'
import { buildApp, type App } from '../src/app'
import { APP_ROLE, SCHEMA, migrations } from '../src/db/migrations'

type Json = Record<string, unknown>

/**
 * The far ends of the lookups: a local HTTP server that speaks the patients and appointments
 * services' internal endpoints (200 or 404 per company, 401 without a valid assertion from
 * clinical), so the real clients, assertions and timeouts run.
 */
export async function directoryFarEnd(keys = testAssertionKeys(['clinical'])) {
  const patients = new Map<string, string | null>()
  const appointments = new Map<string, string>()
  let mode: 'ok' | 'error' = 'ok'
  const server: Server = createServer(async (req, res) => {
    const path = (req.url ?? '').split('?')[0]!
    const check = await verifyAssertion(req.headers[ASSERTION_HEADER] as string | undefined, keys, {
      method: req.method!,
      path,
    })
    const send = (status: number, body: Json) =>
      res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body))
    if (mode === 'error') return send(500, { code: 'internal_error' })
    if (!check.ok || check.claims.iss !== 'clinical') return send(401, { code: 'unauthenticated' })
    const company = check.claims.companyId
    const patient = /^\/internal\/patients\/([^/]+)$/.exec(path)?.[1]
    const key = `${company}:${patient}`
    if (patient && patients.has(key))
      return send(200, internalAnswers.patient({ id: patient, codalmacen: patients.get(key) ?? null }))
    const appointment = /^\/internal\/appointments\/([^/]+)$/.exec(path)?.[1]
    const owner = appointments.get(`${company}:${appointment}`)
    if (appointment && owner)
      return send(200, internalAnswers.appointment({ id: appointment, patient_id: owner }))
    return send(404, { code: 'not_found' })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    addPatient(companyId: number, home: string | null = 'ALM1'): string {
      const id = uuidv7()
      patients.set(`${companyId}:${id}`, home)
      return id
    },
    addAppointment(companyId: number, patientId: string): string {
      const id = uuidv7()
      appointments.set(`${companyId}:${id}`, patientId)
      return id
    },
    set mode(m: 'ok' | 'error') {
      mode = m
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
}

export interface Harness {
  app: App
  knex: Knex
  owner: Knex
  far: Awaited<ReturnType<typeof directoryFarEnd>>
  close(): Promise<void>
}

/** Migrates the schema and builds the app on the real database, with the directories' far end. */
export async function startApp(o: { clock?: () => Date; poolMax?: number } = {}): Promise<Harness> {
  const url = process.env.DATABASE_URL!
  await migrate(url, SCHEMA, migrations)
  const logger = createLogger({ service: 'clinical', level: process.env.LOG_LEVEL ?? 'silent' })
  const knex = createDb(url, { schema: SCHEMA, role: APP_ROLE, poolMax: o.poolMax ?? 4 })
  const owner = createDb(url, { schema: SCHEMA, poolMax: 2 })
  const far = await directoryFarEnd()
  // Not started: these tests read the outbox; publishing is the relay's (platform) job.
  const amqp = new Amqp({ url: process.env.AMQP_URL!, log: logger, name: 'clinical-test' })
  const signer = testSigner('clinical')
  const app = await buildApp({
    logger,
    knex,
    amqp,
    version: '261122.01',
    assertionKeys: testAssertionKeys([]),
    serviceSigner: signer,
    services: testServices('clinical', far.url),
    clock: o.clock,
  })
  await app.ready()
  return {
    app,
    knex,
    owner,
    far,
    async close() {
      await app.close()
      await far.close()
      await Promise.all([knex.destroy(), owner.destroy()])
    },
  }
}

type Method = 'GET' | 'POST' | 'PATCH' | 'DELETE'

/** A company (or a token of one) calling the app as the gateway would. */
export function companyOf(h: Harness, overrides: Partial<Principal> = {}) {
  const principal = testPrincipal(overrides)
  const send = async (method: Method, url: string, body?: unknown, headers: Record<string, string> = {}) =>
    h.app.inject({
      method,
      url,
      headers: { ...(await gatewayHeaders(principal, method, url, undefined, undefined, body)), ...headers },
      ...(body === undefined ? {} : { payload: body as Json }),
    })
  return {
    principal,
    send,
    newPatient: (home: string | null = 'ALM1') => h.far.addPatient(principal.companyId, home),
    /** Opens a draft exam for a new patient (fails the test on anything but 201). */
    async exam(body: Json = {}): Promise<Json & { id: string; patient_id: string; version: number }> {
      const res = await send('POST', '/clinical/exams', {
        patient_id: h.far.addPatient(principal.companyId),
        practitioner: 'dr-ficticio',
        ...body,
      })
      if (res.statusCode !== 201) throw new Error(`exam failed: ${res.statusCode} ${res.body}`)
      return res.json()
    },
  }
}
export type Company = ReturnType<typeof companyOf>

/** Obviously fake findings, one of each kind. */
export const FINDINGS = {
  'visual-acuity': { eye: 'right', kind: 'best_corrected', value: '6/9', notation: 'snellen_m' },
  iop: { eye: 'right', mmhg: 17.5, method: 'goldmann', measured_at: '2026-11-20T09:15:00Z' },
  refraction: { eye: 'left', kind: 'manifest', sphere: -2.25, cylinder: 0.75, axis: 30 },
  diagnoses: { code: 'H40.11', system: 'icd10cm', eye: 'both', display: 'glaucoma de angulo abierto' },
} as const

export { outboxOf } from '@clinic/platform/testing'
