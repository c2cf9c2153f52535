import type { KeysetAfter } from '@clinic/platform/core'
import type { AuditDraft, AuditEvent, Outcome } from './audit-event'

export interface AuditFilter {
  action?: string
  resource_type?: string
  resource_id?: string
  username?: string
  outcome?: Outcome
  from?: string
  to?: string
  /** Only events of these centers (null: every center, and events without one). */
  centers: string[] | null
}

export interface SeqPage {
  offset: number
  limit: number
  /** The position of a cursor of `AUDIT_KEYSET` (list-audit-events.ts): only events with a lower seq. */
  after?: KeysetAfter
}

/** Reads of the trail, always scoped to one company. */
export interface AuditEventStore {
  list(companyId: number, filter: AuditFilter, page: SeqPage): Promise<AuditEvent[]>
  count(companyId: number, filter: AuditFilter): Promise<number>
  /** Events the company has on the trail (its chain length since retention), without counting rows. */
  chainLength(companyId: number): Promise<number>
}

/**
 * Appends to the companies' chains (db/repositories/audit-events-repository.ts). `Tx` is the
 * consumer's transaction, the one that also records the event ids, so a redelivery appends nothing.
 */
export interface AuditTrail<Tx> {
  /** The drafts sealed and appended in the order given within each company; the sealed events. */
  append(tx: Tx, drafts: AuditDraft[]): Promise<AuditEvent[]>
}
