import { randomBytes } from 'node:crypto'
import amqplib from 'amqplib'
import type { Knex } from 'knex'
import pg from 'pg'
import {
  baseMigration,
  createDb,
  createLogger,
  ensureRole,
  makeEvent,
  migrate,
  secureTenantTable,
  uuidv7,
  type CloudEvent,
  type Migration,
  type TablePrivilege,
} from '@clinic/platform'
import { appointmentEventData, tapEvents, tcpProxy } from '@clinic/platform/testing'

export const databaseUrl = () => {
  const url = process.env.DATABASE_URL
  if (!url) throw new Error('DATABASE_URL is not set: run through the root jest config (global setup)')
  return url
}
export const amqpUrl = () => {
  const url = process.env.AMQP_URL
  if (!url) throw new Error('AMQP_URL is not set: run through the root jest config (global setup)')
  return url
}

export const testLog = (name: string) =>
  createLogger({ service: `platform-int-${name}`, level: process.env.LOG_LEVEL ?? 'silent' })

/** The platform tables plus `effects`, where test handlers record what they did. */
export const testMigrations = (schema: string): Migration[] => [
  baseMigration(schema),
  {
    name: '0002_effects',
    async up(knex) {
      await knex.raw(`
        CREATE TABLE effects (id bigserial PRIMARY KEY, event_id uuid NOT NULL, idempresa integer NOT NULL, note text);
        CREATE TABLE things (id bigserial PRIMARY KEY, idempresa integer NOT NULL, name text NOT NULL)`)
    },
  },
]

export const schemaName = () => `platform_t_${randomBytes(4).toString('hex')}`

/** A migrated schema of its own for one test file; `drop` removes it. */
export async function testSchema(
  poolMax = 10,
): Promise<{ schema: string; knex: Knex; drop: () => Promise<void> }> {
  const schema = schemaName()
  await migrate(databaseUrl(), schema, testMigrations(schema))
  const knex = createDb(databaseUrl(), { schema, poolMax })
  return {
    schema,
    knex,
    drop: async () => {
      await knex.destroy()
      await dropSchema(schema)
    },
  }
}

export async function dropSchema(schema: string) {
  const client = new pg.Client({ connectionString: databaseUrl() })
  await client.connect()
  try {
    await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`)
  } finally {
    await client.end()
  }
}

const fakeId = () => `0190c5a0-0000-7000-8000-${randomBytes(6).toString('hex')}`

/** A registry event with obviously fake ids for one company. */
export function testEvent(companyId: number): CloudEvent {
  const id = fakeId()
  return makeEvent({
    type: 'appointment.checked_in',
    source: 'clinic/platform-test',
    subject: id,
    data: appointmentEventData({ id, patient_id: fakeId() }),
    companyId,
  })
}

export const eventTap = (routingKey = 'appointment.checked_in') => tapEvents(amqpUrl(), routingKey)

/** A raw channel for queue inspection (message counts, dead letters). */
export async function rawChannel() {
  const conn = await amqplib.connect(amqpUrl())
  const ch = await conn.createChannel()
  return { conn, ch, close: () => conn.close().catch(() => undefined) }
}

/** A cuttable TCP proxy in front of the run's RabbitMQ (see platform testing's tcpProxy). */
export const brokerProxy = (target = new URL(amqpUrl())) => tcpProxy(target)

/**
 * A schema of its own with `things` under row-level security by `idempresa`, a role the policies
 * apply to (granted `grants` on it, plus what `extraSql` adds), and `counts[company]` things per
 * company, whose ids come back in insertion order. `db` connects as the role on a pool of one
 * connection, so every statement of a test meets what the ones before left on it.
 */
export async function rlsThings(
  counts: Record<number, number>,
  o: { grants?: TablePrivilege[]; extraSql?: (schema: string, role: string) => string } = {},
) {
  const schema = schemaName()
  const role = `${schema}_app`
  const owner = createDb(databaseUrl(), { schema })
  await owner.raw(`CREATE SCHEMA ${schema}`)
  await ensureRole(owner, role)
  await owner.raw(`
    CREATE TABLE things (idempresa integer NOT NULL, id uuid NOT NULL, name text NOT NULL, at integer NOT NULL,
      PRIMARY KEY (idempresa, id));
    GRANT USAGE ON SCHEMA ${schema} TO ${role}`)
  await secureTenantTable(owner, 'things', { role, privileges: o.grants ?? ['SELECT'] })
  if (o.extraSql) await owner.raw(o.extraSql(schema, role))
  const ids: Record<number, string[]> = {}
  for (const [company, n] of Object.entries(counts).map(([c, n]) => [Number(c), n] as const)) {
    ids[company] = []
    for (let at = 1; at <= n; at++) {
      const id = uuidv7()
      ids[company].push(id)
      await owner('things').insert({ idempresa: company, id, name: `thing ${company} ${at}`, at })
    }
  }
  const db = createDb(databaseUrl(), { schema, role, poolMax: 1 })
  return {
    schema,
    db,
    ids,
    async close() {
      await db.destroy()
      await dropSchema(schema)
      await owner.raw(`DROP ROLE IF EXISTS ${role}`)
      await owner.destroy()
    },
  }
}
