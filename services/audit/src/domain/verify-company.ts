import type { AuditEvent } from './audit-event'
import {
  ChainVerifier,
  GENESIS_ANCHOR,
  type ChainAnchor,
  type ChainHead,
  type VerifyResult,
} from './verify-chain'

/** What verifying a company's chain reads (the database, or rows in memory in tests). */
export interface ChainReader {
  head(companyId: number): Promise<ChainHead | null>
  anchor(companyId: number): Promise<ChainAnchor | null>
  /** The company's events with anchorSeq < seq <= untilSeq, in seq order. */
  events(companyId: number, anchorSeq: number, untilSeq: number): AsyncIterable<AuditEvent>
  /** Events beyond the company's chain head, and that head, read in one snapshot. */
  pastHead(companyId: number): Promise<{ headSeq: number; count: number }>
}

/**
 * Recomputes a company's hash chain from its anchor to its head. The head is read first and
 * events after it are left for the next run, so appends during a verification do not disturb it.
 * With a key every row must be keyed, but for `allowUnkeyed` plain rows at the start (ChainVerifier).
 */
export async function verifyCompany(
  reader: ChainReader,
  companyId: number,
  key?: string,
  allowUnkeyed = 0,
): Promise<VerifyResult> {
  const head = await reader.head(companyId)
  const anchor = (await reader.anchor(companyId)) ?? GENESIS_ANCHOR
  const verifier = new ChainVerifier(companyId, anchor, key, allowUnkeyed)
  for await (const e of reader.events(companyId, anchor.seq, head?.seq ?? anchor.seq))
    if (!verifier.push(e)) break
  const result = verifier.finish(head)
  if (!result.ok) return result
  // Rows the head does not cover (a head moved back) would otherwise never be read. Counted
  // against the head as it is now, in one snapshot, so appends meanwhile are no false alarm.
  const past = await reader.pastHead(companyId)
  if (past.count > 0)
    return {
      ok: false,
      company: companyId,
      count: result.count,
      seq: past.headSeq + 1,
      eventId: null,
      reason: `${past.count} events past the chain head at seq ${past.headSeq}`,
    }
  return result
}
