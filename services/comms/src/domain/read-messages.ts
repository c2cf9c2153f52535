import {
  NotFound,
  assertOffsetOrAfter,
  centerVisible,
  keyset,
  keysetCursor,
  pageOf,
  parseKeyset,
  visibleCenters,
  type Ctx,
  type Page,
} from '@clinic/platform/core'
import type { ListMessagesQuery, VersionedMessage } from '../schemas/message'
import type { MessageStore } from './message-store'

/** A message of the caller's company, visible under the token's centers (else 404, as missing). */
export async function getMessage(ctx: Ctx, store: MessageStore, id: string): Promise<VersionedMessage> {
  const message = await store.findById(ctx.auth.companyId, id)
  if (!message || !centerVisible(visibleCenters(ctx.auth, undefined), message.codalmacen))
    throw new NotFound('No such message')
  return message
}

/** Newest first; a cursor's instant must be exactly as the list wrote it (strict: parseKeyset). */
export const MESSAGE_KEYSET = keyset({
  order: 'desc',
  columns: [
    { name: 'created_at', kind: 'instant' },
    { name: 'id', kind: 'uuid' },
  ],
})

/** Newest first; `meta.total` exact; `after` continues from `meta.next` without offset cost. */
export async function listMessages(
  ctx: Ctx,
  store: MessageStore,
  q: ListMessagesQuery,
): Promise<Page<VersionedMessage>> {
  assertOffsetOrAfter(q)
  const centers = visibleCenters(ctx.auth, q.codalmacen)
  const after = q.after === undefined ? undefined : parseKeyset(MESSAGE_KEYSET, q.after)
  const offset = q.offset
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
    limit: q.limit + 1,
  })
  return pageOf(rows, { total, offset, limit: q.limit, cursorOf: (m) => keysetCursor(MESSAGE_KEYSET, m) })
}
