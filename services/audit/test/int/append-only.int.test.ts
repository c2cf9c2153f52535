import type { Knex } from 'knex'
import { setCompany } from '@clinic/platform/db'
import { testPrincipal } from '@clinic/platform/testing'
import { run } from '../../src/cli/admin'
import {
  appendEvents,
  chainReader,
  ensurePartitions,
  toRow,
} from '../../src/db/repositories/audit-events-repository'
import { dropPartitionsBefore } from '../../src/db/retention'
import { computeHash, GENESIS_HASH, sealEvent, toAuditDraft } from '../../src/domain/audit-event'
import { verifyCompany } from '../../src/domain/verify-company'
import { domainEvent, patientData } from '../helpers'
import { chainKey, eventsOf, migrateAudit, ownerDb, record, writerDb } from './setup'

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
    const rows = await eventsOf(writer, events[0]!.idempresa, (q) =>
      q.where('id', events[0]!.id).select(writer.raw('tableoid::regclass::text AS part')),
    )
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
    await expect(verifyCompany(chainReader(writer), company, chainKey())).resolves.toMatchObject({
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
    // Re-hashed without the key: the row itself is the broken link (a plain hash where keyed ones
    // are required); the next row's prev_hash would not match it either.
    await expect(verifyCompany(chainReader(writer), a.company, chainKey())).resolves.toMatchObject({
      ok: false,
      seq: 1,
      reason: 'an unkeyed hash, and AUDIT_CHAIN_KEY requires keyed ones',
    })
    await expect(verifyCompany(chainReader(writer), b.company, chainKey())).resolves.toMatchObject({
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

describe('chain heads and keys', () => {
  const head = (company: number) => owner('chain_heads').where({ idempresa: company }).first()

  it('the service role cannot write a chain head; advance_chain_head moves it one linked event forward only', async () => {
    const { company, events } = await seedCompany(2)
    for (const [sql, bindings] of [
      ['UPDATE chain_heads SET seq = 1 WHERE idempresa = ?', [company]],
      [
        'INSERT INTO chain_heads (idempresa, seq, hash, recorded_at) VALUES (?, 0, ?, now())',
        [company + 1, 'x'],
      ],
    ] as const)
      expect((await attempt(writer, sql, bindings)).code).toBe('42501')
    for (const [seq, hash] of [
      [1, events[0]!.hash], // back
      [2, events[1]!.hash], // not forward
      [3, 'k1.' + 'a'.repeat(64)], // forward, to no event
    ] as const)
      expect(
        (await attempt(writer, 'SELECT advance_chain_head(?, ?, ?)', [company, seq, hash])).message,
      ).toMatch(/chain head/)
    expect(await head(company)).toMatchObject({ seq: 2, hash: events[1]!.hash })
  })

  it('appends a batch per company in one move of each head; audit:verify holds; a run that does not link is refused', async () => {
    const [a, b] = [testPrincipal(), testPrincipal()]
    await record(writer, [domainEvent('patient.created', patientData(), { principal: a })])
    const drafts = Array.from({ length: 10 }, (_, i) =>
      toAuditDraft(domainEvent('patient.created', patientData(), { principal: i % 3 ? a : b })),
    )
    const sealed = await writer.transaction((trx) => appendEvents(trx, drafts, chainKey()))
    // In the given order within each company, seqs without gaps after what was there.
    const ofA = sealed.filter((e) => e.idempresa === a.companyId)
    expect(ofA.map((e) => e.seq)).toEqual([2, 3, 4, 5, 6, 7])
    expect(sealed.filter((e) => e.idempresa === b.companyId).map((e) => e.seq)).toEqual([1, 2, 3, 4])
    expect(await head(a.companyId)).toMatchObject({ seq: 7, hash: ofA.at(-1)!.hash })
    for (const company of [a.companyId, b.companyId])
      expect((await admin('audit:verify', '--company', String(company))).code).toBe(0)

    // The writer inserts an event that does not link to the head and tries to move past it.
    const [last] = sealed.filter((e) => e.idempresa === b.companyId).slice(-1)
    const forged = sealEvent(
      toAuditDraft(domainEvent('patient.created', patientData(), { principal: b })),
      { seq: last!.seq + 1, prevHash: 'k1.' + 'b'.repeat(64), recordedAt: new Date() },
      chainKey(),
    )
    const refused = await writer
      .transaction(async (trx) => {
        await setCompany(trx, b.companyId)
        await trx('events').insert({ ...toRow(forged), http: null })
        await trx.raw('SELECT advance_chain_head_to(?, ?, ?)', [b.companyId, forged.seq, forged.hash])
      })
      .catch((err: Error) => err)
    expect((refused as Error).message).toMatch(/chain head of company \d+ moves only over linked events/)
  })

  it('audit:verify reports events past the chain head (a head moved back by the owner)', async () => {
    const { company, events } = await seedCompany(3)
    await owner('chain_heads').where({ idempresa: company }).update({ seq: 1, hash: events[0]!.hash })
    await expect(admin('audit:verify', '--company', String(company))).resolves.toEqual({
      code: 1,
      out: `broken: company ${company} at seq 2 (event none): 2 events past the chain head at seq 1\n`,
    })
  })

  it('hashes are keyed: a rewrite by the owner with plain SHA-256, or another key, shows', async () => {
    const a = await seedCompany(3)
    const b = await seedCompany(3)
    expect(a.events.every((e) => e.hash.startsWith('k1.'))).toBe(true)
    // The owner rewrites seq 2 and 3 and the head, consistently, as it could with an unkeyed chain.
    const rewrite = async (company: number, events: typeof a.events, key: string | undefined) => {
      let prev = events[0]!.hash
      await owner.transaction(async (trx) => {
        await trx.raw('SET LOCAL session_replication_role = replica')
        for (const e of events.slice(1)) {
          const forged = {
            ...e,
            action: 'patient.deleted',
            actor: { ...e.actor, username: 'mallory' },
            prev_hash: prev,
          }
          prev = computeHash(forged, key)
          await trx('events').where({ idempresa: company, seq: e.seq }).update({
            action: forged.action,
            actor_username: 'mallory',
            prev_hash: forged.prev_hash,
            hash: prev,
          })
        }
        await trx('chain_heads').where({ idempresa: company }).update({ hash: prev })
      })
    }
    await rewrite(a.company, a.events, undefined)
    await rewrite(b.company, b.events, 'another-key-0123456789abcdef0123456789')
    await expect(verifyCompany(chainReader(writer), a.company, chainKey())).resolves.toMatchObject({
      ok: false,
      seq: 2,
      reason: 'an unkeyed hash after keyed ones',
    })
    await expect(verifyCompany(chainReader(writer), b.company, chainKey())).resolves.toMatchObject({
      ok: false,
      seq: 2,
      reason: "hash does not match the event's contents",
    })
  })
})

describe('a whole chain rewritten unkeyed', () => {
  it('is reported by audit:verify at seq 1, and past the allowance with --allow-unkeyed', async () => {
    const { company, events } = await seedCompany(4)
    // The owner re-hashes every row from seq 1 with plain SHA-256 (no key needed) and moves the head.
    let prev = GENESIS_HASH
    await owner.transaction(async (trx) => {
      await trx.raw('SET LOCAL session_replication_role = replica')
      for (const e of events) {
        const forged = { ...e, actor: { ...e.actor, username: 'mallory' }, prev_hash: prev }
        prev = computeHash(forged)
        await trx('events')
          .where({ idempresa: company, seq: e.seq })
          .update({ actor_username: 'mallory', prev_hash: forged.prev_hash, hash: prev })
      }
      await trx('chain_heads').where({ idempresa: company }).update({ hash: prev })
    })
    await expect(admin('audit:verify', '--company', String(company))).resolves.toEqual({
      code: 1,
      out: `broken: company ${company} at seq 1 (event ${events[0]!.id}): an unkeyed hash, and AUDIT_CHAIN_KEY requires keyed ones\n`,
    })
    await expect(
      admin('audit:verify', '--company', String(company), '--allow-unkeyed', '2'),
    ).resolves.toEqual({
      code: 1,
      out: `broken: company ${company} at seq 3 (event ${events[2]!.id}): an unkeyed hash beyond the 2 allowed before keyed hashes\n`,
    })
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
    // Recorded before keyed hashes: accepted only as many as the operator allows.
    await expect(verifyCompany(chainReader(writer), company, chainKey())).resolves.toMatchObject({
      ok: false,
      seq: 1,
    })
    await expect(verifyCompany(chainReader(writer), company, chainKey(), 3)).resolves.toMatchObject({
      ok: true,
      count: 4,
      unkeyed: 3,
    })

    await expect(dropPartitionsBefore(owner, '2019-02')).resolves.toEqual(['events_2019_01'])
    expect((await owner.raw(`SELECT to_regclass('audit.events_2019_01') AS t`)).rows[0].t).toBeNull()
    await expect(verifyCompany(chainReader(writer), company, chainKey())).resolves.toMatchObject({
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
