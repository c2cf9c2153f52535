import type { Ctx, FieldError } from '@clinic/platform/core'
import type { ReminderPolicy } from '../schemas/reminder'
import { afterQuietHours } from '../reminders/schedule'

/** Where the company's quiet hours are kept: its reminder policy (reminders-repository). */
export interface QuietHoursStore {
  policy(companyId: number): Promise<Pick<ReminderPolicy, 'quiet_hours'>>
}

/** Whether the runtime knows `zone` (an IANA name: Europe/Madrid). */
export function knownTimeZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat('en', { timeZone: zone })
    return true
  } catch {
    return false
  }
}

/** What the schema cannot say of a send-window body: a time zone the runtime knows. */
export function sendWindowFieldErrors(raw: unknown): FieldError[] {
  const zone = (raw as { time_zone?: unknown } | null)?.time_zone
  return typeof zone === 'string' && zone !== '' && !knownTimeZone(zone)
    ? [{ path: '/time_zone', message: 'is not a time zone this service knows (IANA name)' }]
    : []
}

/**
 * The first instant at or after `at` when the company's messages may go out (DESIGN.md section
 * 20): `at` itself, or the end of the quiet hours of its reminder policy in `time_zone` (a local
 * time, DST-correct). The quiet hours are the company's whether or not its reminders are enabled:
 * they say when it messages no one. RFC 3339 UTC.
 */
export async function sendWindow(
  ctx: Pick<Ctx, 'auth'>,
  store: QuietHoursStore,
  input: { at: string; time_zone: string },
): Promise<{ at: string }> {
  const { quiet_hours } = await store.policy(ctx.auth.companyId)
  return { at: afterQuietHours(new Date(input.at), quiet_hours, input.time_zone).toISOString() }
}
