import type { AuditEvent } from './audit-event'
import type { CheckpointedHead } from './checkpoint'
import { GENESIS_ANCHOR, type VerifyResult } from './verify-chain'
import { verifyCompany, type ChainReader } from './verify-company'

/** What the checkpoints say of a company whose chain verified (the CLI prints it). */
export type CheckpointNote =
  /** The checkpointed head is in the chain (an event, or the retention anchor when `anchored`). */
  | { kind: 'held'; at: string; seq: number; anchored: boolean }
  /** The checkpointed head is older than the retention anchor: retention dropped it, not checked. */
  | { kind: 'retained'; at: string; seq: number; anchorSeq: number }

export interface CheckedCompany {
  result: VerifyResult
  /** null without a checkpointed head, or when the chain is broken (the result says where). */
  note: CheckpointNote | null
}

/** Passes events through, handing the one at `seq` to `seen` on its way. */
async function* watch(events: AsyncIterable<AuditEvent>, seq: number, seen: (e: AuditEvent) => void) {
  for await (const e of events) {
    if (e.seq === seq) seen(e)
    yield e
  }
}

/**
 * Verifies a company's chain (verifyCompany), then holds it against its highest checkpointed head:
 * a head only moves forward, so that head must still be in the chain, at its seq and with its
 * hash. A chain that ends before it lost its tail (cut, and chain_heads moved back); one with
 * another hash there had its tail replaced. Without a checkpointed head (none read, or the company's
 * first event came after the last checkpoint), only the chain is verified.
 */
export async function verifyCompanyAgainst(
  reader: ChainReader,
  companyId: number,
  checkpointed: CheckpointedHead | undefined,
  key?: string,
  allowUnkeyed = 0,
): Promise<CheckedCompany> {
  let found: AuditEvent | undefined
  const watched: ChainReader = checkpointed
    ? {
        ...reader,
        events: (c, after, until) =>
          watch(reader.events(c, after, until), checkpointed.seq, (e) => (found = e)),
      }
    : reader
  const result = await verifyCompany(watched, companyId, key, allowUnkeyed)
  if (!checkpointed || !result.ok) return { result, note: null }

  const { at, seq, hash } = checkpointed
  const named = `checkpoint of ${at} has head ${seq}/${hash}`
  const broken = (atSeq: number, eventId: string | null, reason: string): CheckedCompany => ({
    result: { ok: false, company: companyId, count: result.count, seq: atSeq, eventId, reason },
    note: null,
  })
  if (checkpointed.disputed !== undefined)
    return broken(seq, null, `checkpoints disagree: ${named}, another has ${checkpointed.disputed}`)
  if (result.lastSeq < seq)
    return broken(result.lastSeq + 1, null, `tail missing: ${named}, the database ends at ${result.lastSeq}`)
  const anchor = (await reader.anchor(companyId)) ?? GENESIS_ANCHOR
  if (seq < anchor.seq) return { result, note: { kind: 'retained', at, seq, anchorSeq: anchor.seq } }
  const anchored = seq === anchor.seq
  const actual = anchored ? anchor.hash : found?.hash
  if (actual !== hash)
    return broken(
      seq,
      anchored ? null : (found?.id ?? null),
      `tail replaced: ${named}, the database has ${actual ?? 'no event'} there`,
    )
  return { result, note: { kind: 'held', at, seq, anchored } }
}

/** The CLI's line for a note. */
export function formatCheckpointNote(note: CheckpointNote): string {
  const of = `checkpoint of ${note.at}:`
  if (note.kind === 'retained')
    return `${of} head at seq ${note.seq} is behind the retention anchor at seq ${note.anchorSeq}, not checked`
  return note.anchored
    ? `${of} head at seq ${note.seq} is the retention anchor (its events were dropped by retention)`
    : `${of} head at seq ${note.seq} is in the chain`
}
