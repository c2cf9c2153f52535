import { ValidationFailed, keyset, keysetPage, visibleCenters } from '@clinic/platform/core'
import type { Ctx, Page } from '@clinic/platform/core'
import type { ListAuditEventsInput } from '../schemas/audit-event'
import type { AuditEvent } from './audit-event'
import type { AuditEventStore, AuditFilter } from './audit-event-store'

/** Newest first: seq descending (recording order). */
export const AUDIT_KEYSET = keyset({ order: 'desc', columns: [{ name: 'seq', kind: 'seq' }] })

/** The filter of a query (from after to is a 400), and whether it filters at all. */
function filterOf(ctx: Ctx, input: ListAuditEventsInput): { filter: AuditFilter; filtered: boolean } {
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
  const { centers, ...fields } = filter
  return { filter, filtered: centers !== null || Object.values(fields).some((v) => v !== undefined) }
}

/**
 * The company's trail, newest first (seq descending: recording order). Only the caller's company;
 * a token limited to centers sees only its centers' events.
 */
export function listAuditEvents(
  ctx: Ctx,
  store: AuditEventStore,
  input: ListAuditEventsInput,
): Promise<Page<AuditEvent>> {
  const companyId = ctx.auth.companyId
  return keysetPage(input, {
    keyset: AUDIT_KEYSET,
    filter: () => filterOf(ctx, input),
    fetch: async ({ filter, filtered }, page) => {
      const [rows, total] = await Promise.all([
        store.list(companyId, filter, page),
        // Unfiltered, the chain head knows the count exactly; filtered, the indexes count.
        filtered ? store.count(companyId, filter) : store.chainLength(companyId),
      ])
      return { rows, total }
    },
  })
}
