import { computeHash, GENESIS_HASH, KEYED_PREFIX, type AuditEvent } from './audit-event'

/** Where a company's chain starts: the genesis, or the last event dropped by retention. */
export interface ChainAnchor {
  seq: number
  hash: string
}

export interface ChainHead {
  seq: number
  hash: string
}

export type VerifyResult =
  | { ok: true; company: number; count: number; lastSeq: number; unkeyed?: number }
  | { ok: false; company: number; count: number; seq: number; eventId: string | null; reason: string }

export const GENESIS_ANCHOR: ChainAnchor = { seq: 0, hash: GENESIS_HASH }

/**
 * Walks one company's events in seq order and stops at the first broken link: a gap or repeat in
 * seq, a prev_hash that is not the previous event's hash, or a hash that does not match the
 * event's contents (an edited row). At the end the chain head must name the last event, so
 * events removed from the end show too.
 */
export class ChainVerifier {
  private expectedSeq: number
  private prevHash: string
  private count = 0
  private unkeyed = 0
  private keyedSeen = false
  private failure: VerifyResult | null = null

  /**
   * `key` is AUDIT_CHAIN_KEY. With a key, every row must be keyed: a plain SHA-256 is what anyone
   * with database access can compute, so a chain rewritten unkeyed from its first row would
   * otherwise pass. The first plain row is reported as a broken link. Rows recorded before keyed
   * chains (audit migration 0002) carry plain hashes: `allowUnkeyed` accepts that many at the start
   * of the chain, before any keyed row; the operator gives the number recorded when the key came in
   * (it never grows), so a rewrite longer than that, or past the first keyed row, still shows.
   * Without a key (tests, a chain never keyed), plain rows are checked and keyed ones refused.
   */
  constructor(
    readonly company: number,
    anchor: ChainAnchor = GENESIS_ANCHOR,
    private readonly key?: string,
    private readonly allowUnkeyed = 0,
  ) {
    this.expectedSeq = anchor.seq + 1
    this.prevHash = anchor.hash
  }

  /** Feeds the next event; returns false once the chain is broken (stop feeding then). */
  push(e: AuditEvent): boolean {
    if (this.failure) return false
    const fail = (reason: string) => {
      this.failure = {
        ok: false,
        company: this.company,
        count: this.count,
        seq: e.seq,
        eventId: e.id,
        reason,
      }
      return false
    }
    if (e.idempresa !== this.company) return fail(`event belongs to company ${e.idempresa}`)
    if (e.seq !== this.expectedSeq)
      return fail(
        e.seq > this.expectedSeq
          ? `missing seq ${this.expectedSeq}`
          : `seq repeated or out of order (expected ${this.expectedSeq})`,
      )
    if (e.prev_hash !== this.prevHash) return fail("prev_hash does not match the previous event's hash")
    if (e.hash.startsWith(KEYED_PREFIX)) {
      if (this.key === undefined) return fail('a keyed hash, and no AUDIT_CHAIN_KEY to check it')
      if (computeHash(e, this.key) !== e.hash) return fail("hash does not match the event's contents")
      this.keyedSeen = true
    } else {
      if (this.keyedSeen) return fail('an unkeyed hash after keyed ones')
      if (this.key !== undefined && this.unkeyed >= this.allowUnkeyed)
        return fail(
          this.allowUnkeyed
            ? `an unkeyed hash beyond the ${this.allowUnkeyed} allowed before keyed hashes`
            : 'an unkeyed hash, and AUDIT_CHAIN_KEY requires keyed ones',
        )
      if (computeHash(e) !== e.hash) return fail("hash does not match the event's contents")
      this.unkeyed++
    }
    this.count++
    this.expectedSeq = e.seq + 1
    this.prevHash = e.hash
    return true
  }

  /** The verdict, given the company's chain head (null when the company has no events). */
  finish(head: ChainHead | null): VerifyResult {
    if (this.failure) return this.failure
    const lastSeq = this.expectedSeq - 1
    const headSeq = head?.seq ?? 0
    if (headSeq > lastSeq)
      return {
        ok: false,
        company: this.company,
        count: this.count,
        seq: lastSeq + 1,
        eventId: null,
        reason: `events missing: the chain head is at seq ${headSeq}`,
      }
    if (head ? headSeq < lastSeq || head.hash !== this.prevHash : this.count > 0)
      return {
        ok: false,
        company: this.company,
        count: this.count,
        seq: headSeq,
        eventId: null,
        reason: 'the chain head does not match the last event',
      }
    return {
      ok: true,
      company: this.company,
      count: this.count,
      lastSeq,
      ...(this.unkeyed ? { unkeyed: this.unkeyed } : {}),
    }
  }
}

/** Verifies events already in memory (tests, small exports). */
export function verifyChain(
  company: number,
  events: Iterable<AuditEvent>,
  head: ChainHead | null,
  anchor: ChainAnchor = GENESIS_ANCHOR,
  key?: string,
  allowUnkeyed = 0,
): VerifyResult {
  const v = new ChainVerifier(company, anchor, key, allowUnkeyed)
  for (const e of events) if (!v.push(e)) break
  return v.finish(head)
}

/** The CLI's one line. */
export function formatVerifyResult(r: VerifyResult): string {
  if (r.ok)
    return `ok: company ${r.company}, ${r.count} events, chain intact${
      r.unkeyed ? ` (${r.unkeyed} recorded before keyed hashes)` : ''
    }`
  return `broken: company ${r.company} at seq ${r.seq} (event ${r.eventId ?? 'none'}): ${r.reason}`
}
