import type { Knex } from 'knex'
import pino from 'pino'
import { testAssertionKeys } from '@clinic/platform/testing'
import { Amqp, companyTransaction, createDb, eventOrigins, migrate, type CloudEvent } from '@clinic/platform'
import {
  createBrokerUsers,
  newBrokerPrefix,
  removeBrokerUsers,
  stackAmqpUrl,
} from '@clinic/platform/broker-users'
import { buildApp } from '../../src/app'
import { SCHEMA, WRITER_ROLE, migrations } from '../../src/db/migrations'
import { appendEvent } from '../../src/db/repositories/audit-events-repository'
import { toAuditDraft, type AuditEvent } from '../../src/domain/audit-event'

export const log = pino({ level: process.env.LOG_LEVEL ?? 'silent' })
export const databaseUrl = () => process.env.DATABASE_URL!
export const amqpUrl = () => process.env.AMQP_URL!
export const chainKey = () => process.env.AUDIT_CHAIN_KEY!

export const migrateAudit = () => migrate(databaseUrl(), SCHEMA, migrations)

/** A knex as the service runs it: the append-only writer role. */
export const writerDb = (poolMax = 5) =>
  createDb(databaseUrl(), { schema: SCHEMA, role: WRITER_ROLE, poolMax })
/** A knex as the schema owner (migrations, retention, a tamperer with owner rights). */
export const ownerDb = () => createDb(databaseUrl(), { schema: SCHEMA, poolMax: 2 })

export async function connectAmqp(name = 'audit-test', url = amqpUrl()): Promise<Amqp> {
  const amqp = new Amqp({ url, log, name })
  await amqp.start()
  return amqp
}

/**
 * Broker users of this test file (deploy's permissions, a prefix of its own): each source's events
 * are published as its user, which is what the consumer believes (`origins`).
 */
export function brokerUsersOfFile() {
  const prefix = newBrokerPrefix()
  const rootSecret = `audit-test-${prefix}-0123456789abcdef`
  const connections = new Map<string, Promise<Amqp>>()
  const as = (service: string) => {
    if (!connections.has(service))
      connections.set(
        service,
        connectAmqp(`audit-test-${service}`, stackAmqpUrl(amqpUrl(), service, { prefix, rootSecret })),
      )
    return connections.get(service)!
  }
  return {
    origins: eventOrigins(prefix),
    create: () => createBrokerUsers({ amqpUrl: amqpUrl(), prefix, rootSecret, withTopology: false }),
    /** The connection of `service` (`patients`, `gateway`...), made on first use. */
    as,
    /** Publishes each event as the user of its source (`clinic/<service>`). */
    async publish(events: CloudEvent[]) {
      for (const e of events) await (await as(e.source.replace(/^clinic\//, ''))).publish([e])
    },
    async remove() {
      for (const c of connections.values()) await (await c).close()
      await removeBrokerUsers({ prefix })
    },
  }
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
