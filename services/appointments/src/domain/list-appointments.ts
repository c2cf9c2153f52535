import { ValidationFailed, keyset, keysetPage, visibleCenters } from '@clinic/platform/core'
import type { Ctx, Page } from '@clinic/platform/core'
import type { Appointment, AppointmentSort, ListAppointmentsInput } from '../schemas/appointment'
import type { AppointmentStore } from './appointment-store'
import { parseInstant, toUtc } from './rules'

/**
 * Each sort's order, tagged so a cursor cannot be used with the other. A cursor's instant must be
 * exactly as the list wrote it and in the booking window (a forged '2026-02-30' or an offset of
 * +23:59 is a 400, never a database error).
 */
const startsAt = (order: 'asc' | 'desc', tag: string) =>
  keyset({
    tag,
    order,
    columns: [
      { name: 'starts_at', kind: 'instant', check: (v: string) => 'ms' in parseInstant(v) },
      { name: 'id', kind: 'uuid' },
    ],
  })
export const APPOINTMENT_KEYSETS = {
  starts_at: startsAt('asc', 'a'),
  '-starts_at': startsAt('desc', 'd'),
} as const satisfies Record<AppointmentSort, unknown>

/** The sort values of a row, tagged with the sort. */
export const cursorOf = (sort: AppointmentSort, a: Appointment): string =>
  APPOINTMENT_KEYSETS[sort].cursorOf(a)

/** The position of a cursor of this sort (strict: a cursor is client input). */
export const parseCursor = (sort: AppointmentSort, cursor: string) => APPOINTMENT_KEYSETS[sort].parse(cursor)

/** `from`/`to` on starts_at (half-open: from <= starts_at < to), in the same window as bookings. */
function rangeOf(input: ListAppointmentsInput): { from?: string; to?: string } {
  const errors = []
  for (const field of ['from', 'to'] as const) {
    const value = input[field]
    if (value === undefined) continue
    const parsed = parseInstant(value)
    if ('error' in parsed) errors.push({ path: `/${field}`, message: parsed.error })
  }
  if (!errors.length && input.from && input.to && Date.parse(input.to) <= Date.parse(input.from))
    errors.push({ path: '/to', message: 'must be after from' })
  if (errors.length) throw new ValidationFailed(errors, 'The query string is not valid')
  return { from: input.from && toUtc(input.from), to: input.to && toUtc(input.to) }
}

export function listAppointments(
  ctx: Ctx,
  store: AppointmentStore,
  input: ListAppointmentsInput,
): Promise<Page<Appointment>> {
  const sort = input.sort ?? 'starts_at'
  return keysetPage(input, {
    keyset: APPOINTMENT_KEYSETS[sort],
    filter: () => ({
      ...rangeOf(input),
      centers: visibleCenters(ctx.auth, input.codalmacen),
      patientId: input.patient_id?.toLowerCase(),
      seriesId: input.series_id?.toLowerCase(),
      practitioner: input.practitioner,
      statuses: input.status && [...new Set(input.status)],
    }),
    fetch: (filter, page) => store.list(ctx.auth.companyId, { ...filter, ...page, sort }),
  })
}
