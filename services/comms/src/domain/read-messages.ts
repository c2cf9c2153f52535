import {
  NotFound,
  ValidationFailed,
  centerVisible,
  decodeCursor,
  encodeCursor,
  isIsoInstant,
  isUuid,
  pageOf,
  visibleCenters,
  type Ctx,
  type Page,
} from '@clinic/platform/core'
import type { ListMessagesQuery, VersionedMessage } from '../schemas/message'
import type { ListFilter, MessageStore } from './message-store'

/** A message of the caller's company, visible under the token's centers (else 404, as missing). */
export async function getMessage(ctx: Ctx, store: MessageStore, id: string): Promise<VersionedMessage> {
  const message = await store.findById(ctx.auth.companyId, id)
  if (!message || !centerVisible(visibleCenters(ctx.auth, undefined), message.codalmacen))
    throw new NotFound('No such message')
  return message
}

/**
 * The (created_at, id) of a `meta.next` cursor. Strict: the instant exactly as the list writes it
 * (a forged `2026-02-30T10:00:00Z` or `1 2 3`, which Date.parse takes, is a 400 here, never a
 * database error), and a UUID.
 */
export function parseCursor(cursor: string): NonNullable<ListFilter['after']> {
  const [created_at, id] = decodeCursor(cursor, 2)
  if (!isIsoInstant(created_at) || typeof id !== 'string' || !isUuid(id))
    throw new ValidationFailed([{ path: '/after', message: 'is not a cursor from meta.next' }])
  return { created_at, id }
}

/** Newest first; `meta.total` exact; `after` continues from `meta.next` without offset cost. */
export async function listMessages(
  ctx: Ctx,
  store: MessageStore,
  q: ListMessagesQuery,
): Promise<Page<VersionedMessage>> {
  const centers = visibleCenters(ctx.auth, q.codalmacen)
  const after = q.after ? parseCursor(q.after) : undefined
  const offset = q.after ? 0 : q.offset
  const { rows, total } = await store.list(ctx.auth.companyId, {
    centers,
    patientId: q.patient_id,
    appointmentId: q.appointment_id,
    status: q.status,
    channel: q.channel,
    from: q.from,
    to: q.to,
    after,
    offset,
    limit: q.limit,
  })
  return pageOf(rows, { total, offset, limit: q.limit, cursorOf: (m) => encodeCursor([m.created_at, m.id]) })
}
