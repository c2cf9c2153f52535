import { createHmac } from 'node:crypto'
import { canonicalJson } from '@clinic/platform/core'
import type { AuditEvent } from '../../src/domain/audit-event'
import {
  checkpointLine,
  checkpointOf,
  highestHead,
  parseCheckpointLine,
  type Checkpoint,
  type CheckpointHead,
} from '../../src/domain/checkpoint'
import type { ChainAnchor } from '../../src/domain/verify-chain'
import type { ChainReader } from '../../src/domain/verify-company'
import { formatCheckpointNote, verifyCompanyAgainst } from '../../src/domain/verify-checkpoint'
import { sealedChain } from '../helpers'

const key = 'unit-chain-key-0123456789abcdef0123456789'
const at = new Date(Date.UTC(2026, 10, 22, 9, 30))
const db = 'pg:7441000000000000001/16384'
const heads: CheckpointHead[] = [
  { idempresa: 7, seq: 12, hash: 'k1.' + 'a'.repeat(64) },
  { idempresa: 9, seq: 3, hash: 'k1.' + 'b'.repeat(64) },
]

describe('a checkpoint line', () => {
  it('is canonical JSON with a signature, and reads back under the same key', () => {
    const line = checkpointLine(at, heads, key, db)
    expect(line).not.toContain('\n')
    expect(canonicalJson(JSON.parse(line))).toBe(line)
    expect(parseCheckpointLine(line, key)).toEqual({
      ok: true,
      checkpoint: { v: 2, at: '2026-11-22T09:30:00.000Z', db, heads },
    })
  })

  it('names its database, which the signature covers; a version 1 line names none and is held against any', () => {
    const parsed = parseCheckpointLine(checkpointLine(at, heads, key, db), key)
    expect(parsed.ok && checkpointOf(parsed.checkpoint, db)).toBe(true)
    expect(parsed.ok && checkpointOf(parsed.checkpoint, 'pg:7441000000000000001/16385')).toBe(false)
    const c = JSON.parse(checkpointLine(at, heads, key, db)) as Record<string, unknown>
    c.db = 'pg:7441000000000000001/16385'
    expect(parseCheckpointLine(JSON.stringify(c), key)).toEqual({ ok: false, reason: 'bad signature' })

    // Any body signed as the writer signs (the key derived from the chain key).
    const signed = (body: object) =>
      canonicalJson({
        ...body,
        sig: createHmac('sha256', createHmac('sha256', key).update('audit-checkpoint-v1').digest())
          .update(canonicalJson(body))
          .digest('hex'),
      })
    // What the writer signed before lines named their database.
    const v1 = { v: 1, at: at.toISOString(), heads }
    const old = parseCheckpointLine(signed(v1), key)
    expect(old).toEqual({ ok: true, checkpoint: v1 })
    expect(old.ok && checkpointOf(old.checkpoint, db)).toBe(true)
    // A version 2 line without its database, or a version 1 line with one, is no checkpoint.
    for (const body of [
      { v: 2, at: at.toISOString(), heads },
      { v: 1, at: at.toISOString(), db, heads },
    ])
      expect(parseCheckpointLine(signed(body), key)).toEqual({
        ok: false,
        reason: 'signed, but not a checkpoint of this version',
      })
  })

  it.each<[string, (c: Record<string, unknown>) => void]>([
    ['a head moved back', (c) => ((c.heads as CheckpointHead[])[0]!.seq = 10)],
    ['another hash', (c) => ((c.heads as CheckpointHead[])[0]!.hash = 'k1.' + 'c'.repeat(64))],
    ['another company', (c) => ((c.heads as CheckpointHead[])[1]!.idempresa = 8)],
    ['a head left out', (c) => (c.heads as CheckpointHead[]).pop()],
    ['a head added', (c) => (c.heads as CheckpointHead[]).push({ idempresa: 1, seq: 1, hash: 'x' })],
    ['another time', (c) => (c.at = '2026-11-23T09:30:00.000Z')],
    ['a field added', (c) => (c.note = 'hello')],
  ])('is refused with %s', (_, change) => {
    const c = JSON.parse(checkpointLine(at, heads, key, db)) as Record<string, unknown>
    change(c)
    expect(parseCheckpointLine(JSON.stringify(c), key)).toEqual({ ok: false, reason: 'bad signature' })
  })

  it('is refused when signed with another key, or with the chain key itself', () => {
    expect(parseCheckpointLine(checkpointLine(at, heads, `${key}-other`, db), key)).toEqual({
      ok: false,
      reason: 'bad signature',
    })
    // The checkpoint key is derived from the chain key (domain separation): an HMAC under the chain
    // key itself, what the event hashes use, is no signature.
    const body: Checkpoint = { v: 2, at: at.toISOString(), db, heads }
    const sig = createHmac('sha256', key).update(canonicalJson(body)).digest('hex')
    expect(parseCheckpointLine(canonicalJson({ ...body, sig }), key)).toMatchObject({ ok: false })
  })

  it('is refused torn, unsigned or not JSON', () => {
    const line = checkpointLine(at, heads, key, db)
    expect(parseCheckpointLine(line.slice(0, -10), key)).toEqual({ ok: false, reason: 'not JSON' })
    expect(parseCheckpointLine(JSON.stringify({ v: 1, at, heads }), key)).toEqual({
      ok: false,
      reason: 'no signature',
    })
    expect(parseCheckpointLine('[1]', key)).toEqual({ ok: false, reason: 'not a checkpoint' })
  })
})

describe('highestHead', () => {
  const cp = (when: string, hs: CheckpointHead[]): Checkpoint => ({ v: 1, at: when, heads: hs })
  it("keeps a company's highest head: a later checkpoint with a lower one (after a cut) does not lower it", () => {
    let best = highestHead(undefined, cp('t1', heads), 7)
    best = highestHead(best, cp('t2', [{ idempresa: 7, seq: 15, hash: 'h15' }]), 7)
    best = highestHead(best, cp('t3', [{ idempresa: 7, seq: 11, hash: 'h11' }]), 7)
    best = highestHead(best, cp('t4', [{ idempresa: 9, seq: 99, hash: 'h99' }]), 7)
    expect(best).toEqual({ at: 't2', seq: 15, hash: 'h15' })
    expect(highestHead(undefined, cp('t1', heads), 8)).toBeUndefined()
  })

  it('marks a head two checkpoints give different hashes', () => {
    const best = highestHead(
      highestHead(undefined, cp('t1', heads), 9),
      cp('t2', [{ ...heads[1]!, hash: 'x' }]),
      9,
    )
    expect(best).toEqual({ at: 't1', seq: 3, hash: heads[1]!.hash, disputed: 'x' })
  })
})

const chain = (company: number, n: number, anchor?: ChainAnchor) => sealedChain(company, n, anchor, key)

/** A company's rows in memory: `events` as stored, the head on the last of them. */
function reader(events: AuditEvent[], anchor: ChainAnchor | null = null): ChainReader {
  const last = events.at(-1)
  const head = last ? { seq: last.seq, hash: last.hash } : anchor
  return {
    head: async () => head,
    anchor: async () => anchor,
    pastHead: async () => ({ headSeq: head?.seq ?? 0, count: 0 }),
    events: async function* (_c, from, until) {
      for (const e of events) if (e.seq > from && e.seq <= until) yield e
    },
  }
}

describe('verifyCompanyAgainst', () => {
  const events = chain(7, 5)
  const checkpointed = (seq: number, hash = events[seq - 1]!.hash) => ({ at: 'T', seq, hash })

  it('holds when the checkpointed head is in the chain', async () => {
    const checked = await verifyCompanyAgainst(reader(events), 7, checkpointed(4), key)
    expect(checked).toEqual({
      result: { ok: true, company: 7, count: 5, lastSeq: 5 },
      note: { kind: 'held', at: 'T', seq: 4, anchored: false },
    })
    expect(formatCheckpointNote(checked.note!)).toBe('checkpoint of T: head at seq 4 is in the chain')
  })

  it('reports a tail cut and the head moved back, which the chain alone does not show', async () => {
    const cut = reader(events.slice(0, 3))
    await expect(verifyCompanyAgainst(cut, 7, undefined, key)).resolves.toMatchObject({
      result: { ok: true },
    })
    await expect(verifyCompanyAgainst(cut, 7, checkpointed(5), key)).resolves.toEqual({
      result: {
        ok: false,
        company: 7,
        count: 3,
        seq: 4,
        eventId: null,
        reason: `tail missing: checkpoint of T has head 5/${events[4]!.hash}, the database ends at 3`,
      },
      note: null,
    })
    // Every event gone, and the head too.
    await expect(verifyCompanyAgainst(reader([]), 7, checkpointed(5), key)).resolves.toMatchObject({
      result: {
        ok: false,
        seq: 1,
        reason: expect.stringMatching(/^tail missing: .* the database ends at 0$/),
      },
    })
  })

  it('reports another hash at the checkpointed seq, and checkpoints that disagree', async () => {
    await expect(
      verifyCompanyAgainst(reader(events), 7, checkpointed(4, 'k1.' + 'f'.repeat(64)), key),
    ).resolves.toMatchObject({
      result: {
        ok: false,
        seq: 4,
        eventId: events[3]!.id,
        reason: expect.stringMatching(/^tail replaced: /),
      },
    })
    await expect(
      verifyCompanyAgainst(reader(events), 7, { ...checkpointed(4), disputed: 'x' }, key),
    ).resolves.toMatchObject({
      result: { ok: false, reason: expect.stringMatching(/^checkpoints disagree: /) },
    })
  })

  it('leaves a broken chain as it is', async () => {
    const gap = reader([...events.slice(0, 2), ...events.slice(3)])
    await expect(verifyCompanyAgainst(gap, 7, checkpointed(5), key)).resolves.toMatchObject({
      result: { ok: false, seq: 4, reason: 'missing seq 3' },
      note: null,
    })
  })

  it('after retention: the anchor holds a head at its seq; an older head is not checked', async () => {
    const anchor = { seq: 3, hash: events[2]!.hash }
    const kept = reader(events.slice(3), anchor)
    await expect(verifyCompanyAgainst(kept, 7, checkpointed(3), key)).resolves.toMatchObject({
      result: { ok: true },
      note: { kind: 'held', seq: 3, anchored: true },
    })
    await expect(verifyCompanyAgainst(kept, 7, checkpointed(3, 'other'), key)).resolves.toMatchObject({
      result: { ok: false, reason: expect.stringMatching(/^tail replaced: .* the database has k1\./) },
    })
    const older = await verifyCompanyAgainst(kept, 7, checkpointed(2), key)
    expect(older.note).toEqual({ kind: 'retained', at: 'T', seq: 2, anchorSeq: 3 })
    expect(formatCheckpointNote(older.note!)).toMatch(/behind the retention anchor at seq 3, not checked$/)
  })
})
