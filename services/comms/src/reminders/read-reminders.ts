import { keyset, keysetPage, visibleCenters, type Ctx, type Page } from '@clinic/platform/core'
import type { ListRemindersQuery, Reminder } from '../schemas/reminder'
import type { ReminderStore } from './reminder-store'

/** Soonest first. */
export const REMINDER_KEYSET = keyset({
  order: 'asc',
  columns: [
    { name: 'due_at', kind: 'instant' },
    { name: 'id', kind: 'uuid' },
  ],
})

/** The company's reminders (an appointment's with `appointment_id`), under the token's centers. */
export function listReminders(
  ctx: Ctx,
  store: Pick<ReminderStore, 'list'>,
  q: ListRemindersQuery,
): Promise<Page<Reminder>> {
  return keysetPage(q, {
    keyset: REMINDER_KEYSET,
    filter: () => visibleCenters(ctx.auth, q.codalmacen),
    fetch: (centers, page) =>
      store.list(ctx.auth.companyId, {
        ...page,
        centers,
        appointmentId: q.appointment_id,
        status: q.status,
      }),
  })
}
