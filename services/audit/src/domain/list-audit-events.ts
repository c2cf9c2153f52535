import { decodeCursor, encodeCursor, ValidationFailed, visibleCenters, type Ctx } from '@clinic/platform'
import type { AuditEventRepository, AuditFilter } from '../db/repositories/audit-events'
import type { AuditEvent, Outcome } from './audit-event'

export interface ListAuditEventsInput {
  offset: number
  limit: number
  after?: string
  codalmacen?: string
  action?: string
  resource_type?: string
  resource_id?: string
  username?: string
  outcome?: Outcome
  from?: string
  to?: string
}

export interface ListResult {
  data: AuditEvent[]
  meta: { total: number; offset: number; limit: number; next: string | null }
}

function cursorSeq(after: string): number {
  const [seq] = decodeCursor(after, 1)
  if (typeof seq !== 'number' || !Number.isSafeInteger(seq) || seq < 1)
    throw new ValidationFailed([{ path: '/after', message: 'is not a cursor from meta.next' }])
  return seq
}

/**
 * The company's trail, newest first (seq descending: recording order). Only the caller's company;
 * a token limited to centers sees only its centers' events.
 */
export async function listAuditEvents(
  ctx: Ctx,
  input: ListAuditEventsInput,
  repo: AuditEventRepository,
): Promise<ListResult> {
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
  const beforeSeq = input.after === undefined ? undefined : cursorSeq(input.after)
  const [rows, total] = await Promise.all([
    repo.list(companyId, filter, { offset: input.offset, limit: input.limit + 1, beforeSeq }),
    // Unfiltered, the chain head knows the count exactly; filtered, the indexes count.
    filtered ? repo.count(companyId, filter) : repo.chainLength(companyId),
  ])
  const data = rows.slice(0, input.limit)
  const last = data[data.length - 1]
  return {
    data,
    meta: {
      total,
      offset: input.offset,
      limit: input.limit,
      next: rows.length > input.limit && last ? encodeCursor([last.seq]) : null,
    },
  }
}
