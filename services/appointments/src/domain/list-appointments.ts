import {
  ValidationFailed,
  decodeCursor,
  encodeCursor,
  isIsoInstant,
  isUuid,
  pageOf,
  visibleCenters,
  type Ctx,
  type Page,
} from '@clinic/platform/core'
import type { Appointment, AppointmentSort, ListAppointmentsInput } from '../schemas/appointment'
import type { AppointmentStore, ListCursor } from './appointment-store'
import { parseInstant, toUtc } from './rules'

const SORT_TAG = { starts_at: 'a', '-starts_at': 'd' } as const satisfies Record<AppointmentSort, string>

/** The sort values of a row, tagged with the sort so a cursor cannot be used with the other one. */
export const cursorOf = (sort: AppointmentSort, a: Appointment): string =>
  encodeCursor([SORT_TAG[sort], a.starts_at, a.id])

/**
 * A cursor is client input: its instant must be exactly as the list wrote it (`toISOString`, a
 * real day, in the booking window) and its id a UUID, so a forged one ('2026-02-30', an offset of
 * +23:59) is a 400 here, never a database error.
 */
export function parseCursor(sort: AppointmentSort, cursor: string): ListCursor {
  const [tag, startsAt, id] = decodeCursor(cursor, 3)
  if (
    tag !== SORT_TAG[sort] ||
    !isIsoInstant(startsAt) ||
    !('ms' in parseInstant(startsAt)) ||
    typeof id !== 'string' ||
    !isUuid(id)
  )
    throw new ValidationFailed([{ path: '/after', message: 'is not a cursor from meta.next for this sort' }])
  return { starts_at: startsAt, id }
}

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

export async function listAppointments(
  ctx: Ctx,
  store: AppointmentStore,
  input: ListAppointmentsInput,
): Promise<Page<Appointment>> {
  const { offset, limit, sort } = input
  if (input.after !== undefined && offset > 0)
    throw new ValidationFailed([{ path: '/offset', message: 'cannot be combined with after' }])
  const filter = {
    ...rangeOf(input),
    centers: visibleCenters(ctx.auth, input.codalmacen),
    patientId: input.patient_id?.toLowerCase(),
    practitioner: input.practitioner,
    statuses: input.status && [...new Set(input.status)],
    after: input.after === undefined ? undefined : parseCursor(sort, input.after),
  }
  // One row more than the page: it says whether there is a next page.
  const { rows, total } = await store.list(ctx.auth.companyId, { ...filter, sort, offset, limit: limit + 1 })
  return pageOf(rows, { total, offset, limit, cursorOf: (a) => cursorOf(sort, a) })
}
