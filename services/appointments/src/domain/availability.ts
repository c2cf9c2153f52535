import { ValidationFailed, assertCenter, type Ctx, type FieldError } from '@clinic/platform/core'
import {
  DEFAULT_AVAILABILITY_LIMIT,
  MAX_AVAILABILITY_DAYS,
  type AvailabilityInput,
  type Slot,
} from '../schemas/availability'
import type { AppointmentStore } from './appointment-store'
import { parseInstant, toUtc } from './rules'

const DAY_MS = 86_400_000

/** `from` and `to` of an availability query: valid instants, to after from, at most 31 days apart. */
export function availabilityRangeErrors(input: { from?: unknown; to?: unknown }): FieldError[] {
  const errors: FieldError[] = []
  const ms: Record<string, number> = {}
  for (const field of ['from', 'to'] as const) {
    const value = input[field]
    if (typeof value !== 'string') continue
    const parsed = parseInstant(value)
    if ('error' in parsed) errors.push({ path: `/${field}`, message: parsed.error })
    else ms[field] = parsed.ms
  }
  if (ms.from !== undefined && ms.to !== undefined) {
    if (ms.to <= ms.from) errors.push({ path: '/to', message: 'must be after from' })
    else if (ms.to - ms.from > MAX_AVAILABILITY_DAYS * DAY_MS)
      errors.push({ path: '/to', message: `must be at most ${MAX_AVAILABILITY_DAYS} days after from` })
  }
  return errors
}

/**
 * The free slots of a center (DESIGN.md section 11), computed by the database in one statement.
 * The center must be one the token may use; the route has checked the range.
 */
export async function findAvailability(
  ctx: Ctx,
  store: AppointmentStore,
  input: AvailabilityInput,
): Promise<Slot[]> {
  assertCenter(ctx.auth, input.codalmacen)
  const errors = availabilityRangeErrors(input)
  if (errors.length) throw new ValidationFailed(errors, 'The query string is not valid')
  return store.availability(ctx.auth.companyId, {
    center: input.codalmacen,
    from: toUtc(input.from),
    to: toUtc(input.to),
    practitioners: input.practitioner && [...new Set(input.practitioner)],
    duration: input.duration,
    limit: input.limit ?? DEFAULT_AVAILABILITY_LIMIT,
  })
}
