import type { Knex } from 'knex'
import { testPrincipal } from '@clinic/platform/testing'
import { run } from '../../src/cli/admin'
import { chainReader, ensurePartitions, toRow } from '../../src/db/repositories/audit-events'
import { dropPartitionsBefore } from '../../src/db/retention'
import { computeHash, GENESIS_HASH, sealEvent, toAuditDraft } from '../../src/domain/audit-event'
import { verifyCompany } from '../../src/domain/verify-company'
import { domainEvent, patientData } from '../helpers'
import { migrateAudit, ownerDb, record, writerDb } from './setup'

// A loaded machine (2 cores, parallel projects) can take seconds to deliver; waitFor bounds each wait.
jest.setTimeout(60_000)

let writer: Knex
let owner: Knex

beforeAll(async () => {
  await migrateAudit()
  writer = writerDb()
  owner = ownerDb()
})
afterAll(async () => {
  await writer.destroy()
  await owner.destroy()
})

class Rollback extends Error {}
/** Runs a statement in a transaction that is always rolled back; returns how it failed. */
async function attempt(
  knex: Knex,
  sql: string,
  bindings: readonly Knex.Value[] = [],
): Promise<{ code?: string; message: string }> {
  try {
    await knex.transaction(async (trx) => {
      await trx.raw(sql, bindings)
      throw new Rollback('the statement succeeded')
    })
  } catch (err) {
    return err as { code?: string; message: string }
  }
  throw new Error('unreachable')
}

const seedCompany = async (n = 3) => {
  const principal = testPrincipal()
  const events = await record(
    writer,
    Array.from({ length: n }, () => domainEvent('patient.created', patientData(), { principal })),
  )
  return { company: principal.companyId, events }
}

/** Captures what the admin CLI prints. */
async function admin(...args: string[]): Promise<{ code: number; out: string }> {
  let out = ''
  const spy = jest.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
    out += String(chunk)
    return true
  })
  try {
    return { code: await run(args), out }
  } finally {
    spy.mockRestore()
  }
}

describe('append-only store', () => {
  it('the service role may not update, delete, truncate, drop or switch off the guards', async () => {
    const { company } = await seedCompany(1)
    const refused = [
      ['UPDATE events SET action = ? WHERE idempresa = ?', ['x', company]],
      ['DELETE FROM events WHERE idempresa = ?', [company]],
      ['TRUNCATE events', []],
      ['DELETE FROM events_default', []],
      ['ALTER TABLE events DISABLE TRIGGER USER', []],
      ['SET session_replication_role = replica', []],
      ['DROP TABLE events_default', []],
      ['DELETE FROM processed_events', []],
      ['DELETE FROM chain_heads WHERE idempresa = ?', [company]],
    ] as const
    for (const [sql, bindings] of refused) {
      const err = await attempt(writer, sql, bindings)
      expect({ sql, code: err.code }).toEqual({ sql, code: '42501' })
    }
  })

  it('the triggers refuse UPDATE, DELETE and TRUNCATE even to the owner, partitions included', async () => {
    const { company, events } = await seedCompany(1)
    const [part] = (
      await owner.raw(`SELECT tableoid::regclass::text AS part FROM events WHERE id = ?`, [events[0]!.id])
    ).rows
    const statements = [
      ['UPDATE events SET action = ? WHERE idempresa = ?', ['x', company]],
      ['DELETE FROM events WHERE idempresa = ?', [company]],
      [`UPDATE ${part.part} SET action = ? WHERE idempresa = ?`, ['x', company]],
      [`DELETE FROM ${part.part} WHERE idempresa = ?`, [company]],
      ['TRUNCATE events', []],
      [`TRUNCATE ${part.part}`, []],
      ['TRUNCATE events_default', []],
    ] as const
    for (const [sql, bindings] of statements) {
      const err = await attempt(owner, sql, bindings)
      expect({ sql, message: err.message }).toEqual({ sql, message: expect.stringContaining('append-only') })
    }
  })

  it('records into the monthly partition of its recording time', async () => {
    await ensurePartitions(writer, 2)
    const { events } = await seedCompany(1)
    const month = events[0]!.recorded_at.slice(0, 7).replace('-', '_')
    const { rows } = await writer.raw(`SELECT tableoid::regclass::text AS part FROM events WHERE id = ?`, [
      events[0]!.id,
    ])
    expect(rows[0].part).toBe(`events_${month}`)
  })
})

describe('audit:verify', () => {
  it('reports an intact chain', async () => {
    const { company } = await seedCompany(3)
    await expect(admin('audit:verify', '--company', String(company))).resolves.toEqual({
      code: 0,
      out: `ok: company ${company}, 3 events, chain intact\n`,
    })
  })

  it('names the first broken link of a row tampered with by the owner', async () => {
    const { company, events } = await seedCompany(4)
    await owner.transaction(async (trx) => {
      // The only way past the triggers: a superuser switching them off for the session.
      await trx.raw('SET LOCAL session_replication_role = replica')
      await trx('events').where({ idempresa: company, seq: 2 }).update({ actor_username: 'mallory' })
    })
    await expect(verifyCompany(chainReader(writer), company)).resolves.toMatchObject({
      ok: false,
      seq: 2,
      eventId: events[1]!.id,
    })
    await expect(admin('audit:verify', '--company', String(company))).resolves.toEqual({
      code: 1,
      out: `broken: company ${company} at seq 2 (event ${events[1]!.id}): hash does not match the event's contents\n`,
    })
  })

  it('catches a re-hashed edit and a deleted row', async () => {
    const a = await seedCompany(3)
    const edited = { ...a.events[0]!, action: 'patient.deleted' }
    const b = await seedCompany(3)
    await owner.transaction(async (trx) => {
      await trx.raw('SET LOCAL session_replication_role = replica')
      await trx('events')
        .where({ idempresa: a.company, seq: 1 })
        .update({ action: edited.action, hash: computeHash(edited) })
      await trx('events').where({ idempresa: b.company, seq: 2 }).delete()
    })
    await expect(verifyCompany(chainReader(writer), a.company)).resolves.toMatchObject({
      ok: false,
      seq: 2,
      reason: "prev_hash does not match the previous event's hash",
    })
    await expect(verifyCompany(chainReader(writer), b.company)).resolves.toMatchObject({
      ok: false,
      seq: 3,
      reason: 'missing seq 2',
    })
  })

  it('refuses a command without a company', async () => {
    const spy = jest.spyOn(process.stderr, 'write').mockImplementation(() => true)
    try {
      await expect(run(['audit:verify'])).resolves.toBe(2)
    } finally {
      spy.mockRestore()
    }
  })
})

describe('retention', () => {
  it('drops whole old partitions, and verification resumes from the anchor', async () => {
    const principal = testPrincipal()
    const company = principal.companyId
    // Three events recorded in January 2019, in a partition of that month.
    await owner.raw(
      `CREATE TABLE events_2019_01 PARTITION OF events FOR VALUES FROM ('2019-01-01T00:00:00Z') TO ('2019-02-01T00:00:00Z')`,
    )
    let prev = GENESIS_HASH
    for (let seq = 1; seq <= 3; seq++) {
      const e = sealEvent(toAuditDraft(domainEvent('patient.created', patientData(), { principal })), {
        seq,
        prevHash: prev,
        recordedAt: new Date(Date.UTC(2019, 0, 15, 9, seq)),
      })
      await owner('events').insert(toRow(e)) // no http part for a domain event
      prev = e.hash
    }
    await owner('chain_heads').insert({
      idempresa: company,
      seq: 3,
      hash: prev,
      recorded_at: new Date(Date.UTC(2019, 0, 15, 9, 3)),
    })
    await record(writer, [domainEvent('patient.created', patientData(), { principal })])
    await expect(verifyCompany(chainReader(writer), company)).resolves.toMatchObject({ ok: true, count: 4 })

    await expect(dropPartitionsBefore(owner, '2019-02')).resolves.toEqual(['events_2019_01'])
    expect((await owner.raw(`SELECT to_regclass('audit.events_2019_01') AS t`)).rows[0].t).toBeNull()
    await expect(verifyCompany(chainReader(writer), company)).resolves.toMatchObject({
      ok: true,
      count: 1,
      lastSeq: 4,
    })
    expect(await owner('retention_anchors').where({ idempresa: company }).first()).toMatchObject({
      seq: 3,
      hash: prev,
    })
  })
})
