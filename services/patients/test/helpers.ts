import { Amqp, createDb, createLogger, migrate, type Principal } from '@clinic/platform'
import { injectAs, testAssertionKeys, testPrincipal } from '@clinic/platform/testing'
import type { Knex } from 'knex'
import { buildApp } from '../src/app'
import { APP_ROLE, SCHEMA, migrations } from '../src/db/migrations'

export type App = Awaited<ReturnType<typeof buildApp>>

export interface Harness {
  app: App
  /** The service's own connection: the app role, under row-level security. */
  knex: Knex
  /** The schema owner, to inspect rows of any company (outbox, counters) as a test. */
  owner: Knex
  close(): Promise<void>
}

/** Migrates the schema (waits for other files holding the lock) and builds the app on the real DB. */
export async function startApp(o: { logLines?: string[] } = {}): Promise<Harness> {
  const url = process.env.DATABASE_URL!
  await migrate(url, SCHEMA, migrations)
  const { logLines } = o
  const logger = logLines
    ? createLogger({
        service: 'patients',
        level: 'debug',
        destination: { write: (s) => void logLines.push(s) },
      })
    : createLogger({ service: 'patients', level: process.env.LOG_LEVEL ?? 'silent' })
  const knex = createDb(url, { schema: SCHEMA, role: APP_ROLE, poolMax: 4 })
  const owner = createDb(url, { schema: SCHEMA, poolMax: 2 })
  // Not started: these tests read the outbox; publishing is the relay's (platform) job.
  const amqp = new Amqp({ url: process.env.AMQP_URL!, log: logger, name: 'patients-test' })
  const app = await buildApp({
    logger,
    knex,
    amqp,
    version: '261122.01',
    assertionKeys: testAssertionKeys(['appointments', 'comms']),
    serviceSigner: null,
  })
  await app.ready()
  return {
    app,
    knex,
    owner,
    async close() {
      await app.close()
      await Promise.all([knex.destroy(), owner.destroy()])
    },
  }
}

type Json = Record<string, unknown>

/** Calls the app as the gateway would on behalf of `principal`. */
export function clientFor(app: App, principal: Principal) {
  const call = injectAs(app, principal)
  return {
    principal,
    get: (url: string, headers?: Record<string, string>) => call('GET', url, undefined, headers),
    post: (url: string, body: unknown, headers?: Record<string, string>) => call('POST', url, body, headers),
    patch: (url: string, body: unknown, headers?: Record<string, string>) =>
      call('PATCH', url, body, headers),
  }
}
export type Client = ReturnType<typeof clientFor>

export const newCompany = (app: App, overrides: Partial<Principal> = {}) =>
  clientFor(app, testPrincipal(overrides))

let seq = 0
/** Obviously fake patient data; unique national ids so tests never collide by accident. */
export function makePatient(overrides: Json = {}): Json {
  seq += 1
  return {
    first_name: 'Testa',
    last_name: `Ficticia${seq}`,
    birth_date: '1980-02-29',
    ...overrides,
  }
}

/** Creates a patient and returns its body (fails the test on anything but 201). */
export async function createPatient(
  client: Client,
  overrides: Json = {},
  url = '/patients',
): Promise<Json & { id: string; version: number }> {
  const res = await client.post(url, makePatient(overrides))
  if (res.statusCode !== 201) throw new Error(`create failed: ${res.statusCode} ${res.body}`)
  return res.json()
}

export { outboxOf, type OutboxRow } from '@clinic/platform/testing'
