import { findVisible, keyset, keysetPage, visibleCenters, type Ctx, type Page } from '@clinic/platform/core'
import type { ListMessagesQuery, VersionedMessage } from '../schemas/message'
import type { MessageStore } from './message-store'

/**
 * A message of the caller's company, visible under `?codalmacen=` and the token's centers (else 404,
 * as missing: DESIGN.md section 2, a read-one outside the center asked for).
 */
export async function getMessage(
  ctx: Ctx,
  store: MessageStore,
  input: { id: string; queryCenter: string | undefined },
): Promise<VersionedMessage> {
  return findVisible(ctx, store, input.id, { queryCenter: input.queryCenter, notFound: 'No such message' })
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
export function listMessages(
  ctx: Ctx,
  store: MessageStore,
  q: ListMessagesQuery,
): Promise<Page<VersionedMessage>> {
  return keysetPage(q, {
    keyset: MESSAGE_KEYSET,
    filter: () => visibleCenters(ctx.auth, q.codalmacen),
    fetch: (centers, page) =>
      store.list(ctx.auth.companyId, {
        ...page,
        centers,
        patientId: q.patient_id,
        appointmentId: q.appointment_id,
        status: q.status,
        channel: q.channel,
        from: q.from,
        to: q.to,
      }),
  })
}
