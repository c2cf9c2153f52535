import type { Knex } from 'knex'
import { createDb, createLogger, OutboxRelay, type Amqp } from '@clinic/platform'
import { uniqueName, waitFor } from '@clinic/platform/testing'
import { databaseUrl } from './helpers'

// A database error's message can carry a bound value: PostgreSQL quotes the input it could not take
// (`invalid input syntax for type bigint: "..."`), and knex prefixes the statement (interpolated,
// unless compileSqlOnError is false). The relay must log such an error through the platform's
// serializer (an allow-list: code, severity, table...), never its message.

const lines: string[] = []
const log = createLogger({
  service: 'db-error-logging',
  destination: { write: (l: string) => void lines.push(l) },
})
const schema = uniqueName('relay_errors')
let knex: Knex

beforeAll(async () => {
  knex = createDb(databaseUrl(), { schema, poolMax: 1 })
  // The relay binds only its batch size (LIMIT, a bigint): given one PostgreSQL cannot take, its
  // statement fails with the value quoted in the message (any bound value would be logged the same way).
  await knex.raw(`CREATE SCHEMA ${schema}`)
  await knex.raw(
    `CREATE TABLE ${schema}.outbox (id numeric, event_id uuid, type text, payload jsonb, published_at timestamptz)`,
  )
  await knex.raw(
    `INSERT INTO ${schema}.outbox VALUES (7919.5, gen_random_uuid(), 'patient.created', '{}', NULL)`,
  )
})
afterAll(async () => {
  await knex.raw(`DROP SCHEMA ${schema} CASCADE`)
  await knex.destroy()
})

it("logs a failing relay statement's database error without its bound values", async () => {
  const amqp = { connected: true, publishRaw: async () => undefined } as unknown as Amqp
  const relay = new OutboxRelay({ knex, schema, databaseUrl: databaseUrl(), amqp, log, batchSize: 7919.5 })
  // The error as the relay sees it: the bound value is in its message.
  const err = (await relay.drain().catch((e: unknown) => e)) as Error & { code?: string }
  expect(err.code).toBe('22P02')
  expect(err.message).toContain('"7919.5"')

  relay.wake()
  const line = await waitFor(() => lines.find((l) => l.includes('outbox relay paused')), {
    what: 'the relay to log its failure',
  })
  expect(JSON.parse(line)).toMatchObject({ err: { code: '22P02', message: 'database error 22P02' } })
  expect(line).not.toContain('7919')
  expect(line).not.toMatch(/delete from/i)
})
