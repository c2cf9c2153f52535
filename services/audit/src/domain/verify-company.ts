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
}

/**
 * Recomputes a company's hash chain from its anchor to its head. The head is read first and
 * events after it are left for the next run, so appends during a verification do not disturb it.
 */
export async function verifyCompany(reader: ChainReader, companyId: number): Promise<VerifyResult> {
  const head = await reader.head(companyId)
  const anchor = (await reader.anchor(companyId)) ?? GENESIS_ANCHOR
  const verifier = new ChainVerifier(companyId, anchor)
  for await (const e of reader.events(companyId, anchor.seq, head?.seq ?? anchor.seq))
    if (!verifier.push(e)) break
  return verifier.finish(head)
}
