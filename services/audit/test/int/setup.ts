import type { Knex } from 'knex'
import pino from 'pino'
import { testAssertionKeys } from '@clinic/platform/testing'
import {
  Amqp,
  companyTransaction,
  createDb,
  migrate,
  useEventSigningKey,
  type CloudEvent,
} from '@clinic/platform'
import { buildApp } from '../../src/app'
import { SCHEMA, WRITER_ROLE, migrations } from '../../src/db/migrations'
import { appendEvent } from '../../src/db/repositories/audit-events-repository'
import { toAuditDraft, type AuditEvent } from '../../src/domain/audit-event'

export const log = pino({ level: process.env.LOG_LEVEL ?? 'silent' })
export const databaseUrl = () => process.env.DATABASE_URL!
export const amqpUrl = () => process.env.AMQP_URL!
export const signingSecret = () => process.env.EVENT_SIGNING_SECRET!
export const chainKey = () => process.env.AUDIT_CHAIN_KEY!
// What this process publishes is signed, as connectService arranges in a service.
useEventSigningKey(signingSecret())

export const migrateAudit = () => migrate(databaseUrl(), SCHEMA, migrations)

/** A knex as the service runs it: the append-only writer role. */
export const writerDb = (poolMax = 5) =>
  createDb(databaseUrl(), { schema: SCHEMA, role: WRITER_ROLE, poolMax })
/** A knex as the schema owner (migrations, retention, a tamperer with owner rights). */
export const ownerDb = () => createDb(databaseUrl(), { schema: SCHEMA, poolMax: 2 })

export async function connectAmqp(name = 'audit-test'): Promise<Amqp> {
  const amqp = new Amqp({ url: amqpUrl(), log, name })
  await amqp.start()
  return amqp
}

export const buildTestApp = (knex: Knex, amqp: Amqp) =>
  buildApp({
    logger: log,
    knex,
    amqp,
    version: '261122.01',
    assertionKeys: testAssertionKeys(),
    serviceSigner: null,
  })

/** Records events straight through the append path (no broker), one transaction each, in order. */
export async function record(knex: Knex, events: CloudEvent[]): Promise<AuditEvent[]> {
  const out: AuditEvent[] = []
  for (const e of events)
    out.push(await knex.transaction((trx) => appendEvent(trx, toAuditDraft(e), chainKey())))
  return out
}

/**
 * Rows of one company's trail (`shape` adds the rest of the query), read as the service reads
 * them: under that company's row-level security, so a writer's knex sees them.
 */
export const eventsOf = (
  knex: Knex,
  companyId: number,
  shape: (q: Knex.QueryBuilder) => Knex.QueryBuilder = (q) => q,
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
): Promise<any[]> =>
  companyTransaction(knex, companyId, (trx) => shape(trx('events').where({ idempresa: companyId })))

export const countEvents = async (knex: Knex, companyId: number, where: Record<string, unknown> = {}) => {
  const [row] = await eventsOf(knex, companyId, (q) => q.where(where).count({ n: '*' }))
  return Number(row!.n)
}
