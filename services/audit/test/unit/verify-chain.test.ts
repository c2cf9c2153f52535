import { computeHash, type AuditEvent } from '../../src/domain/audit-event'
import { formatVerifyResult, verifyChain } from '../../src/domain/verify-chain'
import { verifyCompany, type ChainReader } from '../../src/domain/verify-company'
import { sealedChain } from '../helpers'

const chain = sealedChain
const headOf = (events: AuditEvent[]) => ({ seq: events.at(-1)!.seq, hash: events.at(-1)!.hash })

describe('verifyChain', () => {
  it('accepts an intact chain: keyed, or plain without a key', () => {
    const key = 'unit-chain-key-0123456789abcdef0123456789'
    const keyed = chain(7, 5, undefined, key)
    const r = verifyChain(7, keyed, headOf(keyed), undefined, key)
    expect(r).toEqual({ ok: true, company: 7, count: 5, lastSeq: 5 })
    expect(formatVerifyResult(r)).toBe('ok: company 7, 5 events, chain intact')
    const plain = chain(7, 5)
    expect(verifyChain(7, plain, headOf(plain))).toEqual({
      ok: true,
      company: 7,
      count: 5,
      lastSeq: 5,
      unkeyed: 5,
    })
    expect(verifyChain(7, keyed, headOf(keyed))).toMatchObject({
      ok: false,
      seq: 1,
      reason: 'a keyed hash, and no AUDIT_CHAIN_KEY to check it',
    })
    expect(verifyChain(7, [], null)).toMatchObject({ ok: true, count: 0 })
  })

  it('with a key, reports the first unkeyed row as a broken link: a whole chain rewritten unkeyed from seq 1 shows', () => {
    const key = 'unit-chain-key-0123456789abcdef0123456789'
    // What an owner can write without the key: every row re-hashed with plain SHA-256, head included.
    const rewritten = chain(7, 5)
    const r = verifyChain(7, rewritten, headOf(rewritten), undefined, key)
    expect(r).toEqual({
      ok: false,
      company: 7,
      count: 0,
      seq: 1,
      eventId: rewritten[0]!.id,
      reason: 'an unkeyed hash, and AUDIT_CHAIN_KEY requires keyed ones',
    })
    expect(formatVerifyResult(r)).toBe(
      `broken: company 7 at seq 1 (event ${rewritten[0]!.id}): an unkeyed hash, and AUDIT_CHAIN_KEY requires keyed ones`,
    )
    // Past the first keyed row, a plain one is refused whatever the allowance.
    const keyedThenPlain = [...chain(7, 2, undefined, key)]
    keyedThenPlain.push(...chain(7, 1, headOf(keyedThenPlain)))
    expect(verifyChain(7, keyedThenPlain, headOf(keyedThenPlain), undefined, key, 5)).toMatchObject({
      ok: false,
      seq: 3,
      reason: 'an unkeyed hash after keyed ones',
    })
  })

  it('accepts plain rows recorded before keyed hashes only as many as the operator allows, at the start', () => {
    const key = 'unit-chain-key-0123456789abcdef0123456789'
    const plain = chain(7, 2)
    const mixed = [...plain, ...chain(7, 3, headOf(plain), key)]
    expect(verifyChain(7, mixed, headOf(mixed), undefined, key)).toMatchObject({
      ok: false,
      seq: 1,
      reason: 'an unkeyed hash, and AUDIT_CHAIN_KEY requires keyed ones',
    })
    const ok = verifyChain(7, mixed, headOf(mixed), undefined, key, 2)
    expect(ok).toEqual({ ok: true, company: 7, count: 5, lastSeq: 5, unkeyed: 2 })
    expect(formatVerifyResult(ok)).toBe(
      'ok: company 7, 5 events, chain intact (2 recorded before keyed hashes)',
    )
    // A whole chain rewritten unkeyed is longer than the allowance (the chain grew since the key).
    const rewritten = chain(7, 5)
    expect(verifyChain(7, rewritten, headOf(rewritten), undefined, key, 2)).toMatchObject({
      ok: false,
      seq: 3,
      eventId: rewritten[2]!.id,
      reason: 'an unkeyed hash beyond the 2 allowed before keyed hashes',
    })
  })

  it('names an edited event', () => {
    const events = chain(7, 5)
    events[2] = { ...events[2]!, actor: { ...events[2]!.actor, username: 'mallory' } }
    const r = verifyChain(7, events, headOf(events))
    expect(r).toMatchObject({ ok: false, seq: 3, eventId: events[2]!.id })
    expect(formatVerifyResult(r)).toBe(
      `broken: company 7 at seq 3 (event ${events[2]!.id}): hash does not match the event's contents`,
    )
  })

  it('names a re-hashed edit by the broken link after it', () => {
    const events = chain(7, 5)
    const edited = { ...events[1]!, action: 'patient.updated' }
    events[1] = { ...edited, hash: computeHash(edited) }
    expect(verifyChain(7, events, headOf(events))).toMatchObject({
      ok: false,
      seq: 3,
      reason: "prev_hash does not match the previous event's hash",
    })
  })

  it('names a deleted event, a repeated seq, a foreign event and a truncated end', () => {
    const events = chain(7, 5)
    const head = headOf(events)
    expect(
      verifyChain(
        7,
        events.filter((e) => e.seq !== 2),
        head,
      ),
    ).toMatchObject({ ok: false, seq: 3, reason: 'missing seq 2' })
    expect(verifyChain(7, [...events.slice(0, 3), events[2]!, ...events.slice(3)], head)).toMatchObject({
      ok: false,
      seq: 3,
    })
    const other = chain(8, 1)
    expect(verifyChain(7, [...events, { ...other[0]!, seq: 6 }], head)).toMatchObject({ ok: false, seq: 6 })
    expect(verifyChain(7, events.slice(0, 4), head)).toMatchObject({
      ok: false,
      seq: 5,
      eventId: null,
      reason: 'events missing: the chain head is at seq 5',
    })
  })

  it('resumes from a retention anchor', () => {
    const dropped = chain(7, 3)
    const kept = chain(7, 2, headOf(dropped))
    expect(verifyChain(7, kept, headOf(kept), headOf(dropped))).toMatchObject({
      ok: true,
      count: 2,
      lastSeq: 5,
    })
    expect(verifyChain(7, kept, headOf(kept))).toMatchObject({ ok: false, seq: 4, reason: 'missing seq 1' })
  })
})

describe('verifyCompany', () => {
  it('reads up to the head it saw first, so later appends do not break it', async () => {
    const events = chain(9, 4)
    const head = headOf(events.slice(0, 3))
    const reader: ChainReader = {
      head: async () => head,
      anchor: async () => null,
      // By the time the count runs, the head has moved on with the appends.
      pastHead: async () => ({ headSeq: 4, count: 0 }),
      events: async function* (_c, from, until) {
        for (const e of events) if (e.seq > from && e.seq <= until) yield e
      },
    }
    await expect(verifyCompany(reader, 9)).resolves.toMatchObject({ ok: true, count: 3 })
  })

  it('passes the chain key and the allowance on: a chain rewritten unkeyed is broken at seq 1', async () => {
    const key = 'unit-chain-key-0123456789abcdef0123456789'
    const events = chain(9, 3)
    const reader: ChainReader = {
      head: async () => headOf(events),
      anchor: async () => null,
      pastHead: async () => ({ headSeq: 3, count: 0 }),
      events: async function* () {
        yield* events
      },
    }
    await expect(verifyCompany(reader, 9, key)).resolves.toMatchObject({ ok: false, seq: 1 })
    await expect(verifyCompany(reader, 9, key, 3)).resolves.toMatchObject({ ok: true, unkeyed: 3 })
  })
})
