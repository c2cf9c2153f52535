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
  injectAs,
  testAssertionKeys,
  testPrincipal,
  testServices,
  testSigner,
  internalAnswers,
} from '@clinic/platform/testing'
import type { Knex } from 'knex'
import { buildApp, waitlistDeps } from '../src/app'
import { WaitlistWorker } from '../src/waitlist-worker'
import { APP_ROLE, SCHEMA, migrations } from '../src/db/migrations'
import type { Appointment } from '../src/schemas/appointment'

export type App = Awaited<ReturnType<typeof buildApp>>
type Json = Record<string, unknown>

/**
 * The far end of the patients lookup: a local HTTP server that speaks the patients service's
 * internal endpoint (GET /internal/patients/:id, 200 or 404 per company, 401 without a valid
 * assertion), so the real client, assertion and timeouts run. `mode` makes it fail on purpose.
 */
export async function patientsFarEnd(keys = testAssertionKeys(['appointments'])) {
  const known = new Set<string>()
  const seen: Array<{ companyId: number; path: string; requestId: string | undefined }> = []
  let mode: 'ok' | 'error' | 'hang' = 'ok'
  const server: Server = createServer(async (req, res) => {
    const path = (req.url ?? '').split('?')[0]!
    const check = await verifyAssertion(req.headers[ASSERTION_HEADER] as string | undefined, keys, {
      method: req.method!,
      path,
    })
    if (mode === 'hang') return // never answers; the client's timeout must end it
    const send = (status: number, body: Json) =>
      res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body))
    if (mode === 'error') return send(500, { code: 'internal_error' })
    if (!check.ok) return send(401, { code: 'unauthenticated' })
    seen.push({ companyId: check.claims.companyId, path, requestId: req.headers['x-request-id'] as string })
    const id = /^\/internal\/patients\/([^/]+)$/.exec(path)?.[1]
    if (req.method === 'GET' && id && known.has(`${check.claims.companyId}:${id}`))
      return send(200, internalAnswers.patient({ id }))
    return send(404, { code: 'not_found' })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    seen,
    /** A new patient of that company, known to the far end. */
    add(companyId: number): string {
      const id = uuidv7()
      known.add(`${companyId}:${id}`)
      return id
    },
    set mode(m: 'ok' | 'error' | 'hang') {
      mode = m
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
}
export type PatientsFarEnd = Awaited<ReturnType<typeof patientsFarEnd>>

export interface Harness {
  app: App
  /** The service's own connection: the app role, under row-level security. */
  knex: Knex
  /** The schema owner, to inspect rows of any company (outbox, counters) as a test. */
  owner: Knex
  patients: PatientsFarEnd
  close(): Promise<void>
}

/** Migrates the schema and builds the app on the real database, with the patients far end. */
export async function startApp(
  o: { poolMax?: number; patientsTimeoutMs?: number; clock?: () => Date; holdTtlSeconds?: number } = {},
): Promise<Harness> {
  const url = process.env.DATABASE_URL!
  await migrate(url, SCHEMA, migrations)
  const logger = createLogger({ service: 'appointments', level: process.env.LOG_LEVEL ?? 'silent' })
  const knex = createDb(url, { schema: SCHEMA, role: APP_ROLE, poolMax: o.poolMax ?? 4 })
  const owner = createDb(url, { schema: SCHEMA, poolMax: 2 })
  const patients = await patientsFarEnd()
  // Not started: these tests read the outbox; publishing is the relay's (platform) job.
  const amqp = new Amqp({ url: process.env.AMQP_URL!, log: logger, name: 'appointments-test' })
  const app = await buildApp({
    logger,
    knex,
    amqp,
    version: '261122.01',
    // As deployed: the gateway's key, and comms' (its internal routes name comms).
    assertionKeys: testAssertionKeys(['comms']),
    serviceSigner: testSigner('appointments'),
    services: testServices('appointments', patients.url, o.patientsTimeoutMs ?? 2000),
    clock: o.clock,
    holdTtlSeconds: o.holdTtlSeconds,
  })
  await app.ready()
  return {
    app,
    knex,
    owner,
    patients,
    async close() {
      await app.close()
      await patients.close()
      await Promise.all([knex.destroy(), owner.destroy()])
    },
  }
}

/** A company (or a token of one) calling the app as the gateway would, with its own patients. */
export function companyOf(h: Harness, overrides: Partial<Principal> = {}) {
  const principal = testPrincipal(overrides)
  const send = injectAs(h.app, principal)
  return {
    principal,
    send,
    /** A patient of this company, known to the patients far end. */
    newPatient: () => h.patients.add(principal.companyId),
    /** Books and returns the appointment (fails the test on anything but 201). */
    async book(overrides: Json = {}): Promise<Appointment> {
      const res = await send(
        'POST',
        '/appointments',
        slot({ patient_id: h.patients.add(principal.companyId), ...overrides }),
      )
      if (res.statusCode !== 201) throw new Error(`booking failed: ${res.statusCode} ${res.body}`)
      return res.json()
    },
  }
}
export type Company = ReturnType<typeof companyOf>

let minute = 0
/**
 * A booking body with obviously fake data. Each call takes a new half hour (far in the future),
 * so tests never collide by accident; pass starts_at/ends_at to aim at a slot.
 */
export function slot(overrides: Json = {}): Json {
  minute += 30
  const start = Date.parse('2030-01-07T08:00:00Z') + minute * 60_000
  return {
    codalmacen: 'ALM1',
    practitioner: 'dra-ficticia',
    starts_at: new Date(start).toISOString(),
    ends_at: new Date(start + 30 * 60_000).toISOString(),
    reason: 'revision de prueba',
    ...overrides,
  }
}

/** comms calling the waitlist's internal offer endpoints for a patient link of company `c`. */
export const asComms = (h: Harness, c: Company) =>
  injectAs(
    h.app,
    {
      companyId: c.principal.companyId,
      userId: '',
      username: 'patient-link',
      tokenId: '',
      companyCenters: [],
      allowedCenters: null,
    },
    testSigner('comms'),
  )

/**
 * The waitlist's worker on the harness's database (started; stop it after), with comms' send window
 * given by `sendWindow`; `runJobs` runs every due job and lapse now, by `clock`.
 */
export function startWaitlistWorker(
  h: Harness,
  o: {
    clock?: () => Date
    sendWindow: (ctx: unknown, at: Date) => Promise<Date>
    concurrency?: number
  },
) {
  const deps = {
    ...waitlistDeps({ knex: h.knex, clock: o.clock, services: {} } as never),
    sendWindow: o.sendWindow,
  }
  const log = createLogger({ service: 'appointments', level: process.env.LOG_LEVEL ?? 'silent' })
  const worker = new WaitlistWorker({ ...deps, log, pollMs: 60_000, concurrency: o.concurrency })
  worker.start()
  return {
    worker,
    async runJobs() {
      await worker.idle()
      worker.wake()
      await worker.idle()
    },
  }
}

export { outboxOf, type OutboxRow } from '@clinic/platform/testing'
