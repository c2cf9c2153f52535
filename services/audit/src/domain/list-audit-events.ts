import {
  ValidationFailed,
  assertOffsetOrAfter,
  keyset,
  keysetCursor,
  pageOf,
  parseKeyset,
  visibleCenters,
  type Ctx,
  type Page,
} from '@clinic/platform/core'
import type { ListAuditEventsInput } from '../schemas/audit-event'
import type { AuditEvent } from './audit-event'
import type { AuditEventStore, AuditFilter } from './audit-event-store'

/** Newest first: seq descending (recording order). */
export const AUDIT_KEYSET = keyset({ order: 'desc', columns: [{ name: 'seq', kind: 'seq' }] })

/**
 * The company's trail, newest first (seq descending: recording order). Only the caller's company;
 * a token limited to centers sees only its centers' events.
 */
export async function listAuditEvents(
  ctx: Ctx,
  store: AuditEventStore,
  input: ListAuditEventsInput,
): Promise<Page<AuditEvent>> {
  assertOffsetOrAfter(input)
  if (input.from && input.to && Date.parse(input.from) > Date.parse(input.to))
    throw new ValidationFailed([{ path: '/to', message: 'must not be before from' }])
  const filter: AuditFilter = {
    action: input.action,
    resource_type: input.resource_type,
    resource_id: input.resource_id,
    username: input.username,
    outcome: input.outcome,
    from: input.from,
    to: input.to,
    centers: visibleCenters(ctx.auth, input.codalmacen),
  }
  const filtered =
    filter.centers !== null ||
    [
      filter.action,
      filter.resource_type,
      filter.resource_id,
      filter.username,
      filter.outcome,
      filter.from,
      filter.to,
    ].some((v) => v !== undefined)
  const companyId = ctx.auth.companyId
  const after = input.after === undefined ? undefined : parseKeyset(AUDIT_KEYSET, input.after)
  const [rows, total] = await Promise.all([
    store.list(companyId, filter, { offset: input.offset, limit: input.limit + 1, after }),
    // Unfiltered, the chain head knows the count exactly; filtered, the indexes count.
    filtered ? store.count(companyId, filter) : store.chainLength(companyId),
  ])
  return pageOf(rows, {
    total,
    offset: input.offset,
    limit: input.limit,
    cursorOf: (e) => keysetCursor(AUDIT_KEYSET, e),
  })
}
