import {
  NotFound,
  UnknownPatient,
  assertCenter,
  uuidv7,
  visibleCenters,
  type Ctx,
  type StoredResponse,
  idempotencyOf,
} from '@clinic/platform/core'
import type { CreateHoldInput, Hold } from '../schemas/availability'
import type { AppointmentStore, Span } from './appointment-store'
import { checkWorking, explainingConflicts } from './calendar-rules'
import type { PatientDirectory } from './directories'
import { toUtc } from './rules'

export interface HoldDeps {
  store: AppointmentStore
  patients: PatientDirectory
  clock: () => Date
  /** How long a hold lives (HOLD_TTL_SECONDS). */
  holdTtlSeconds: number
}

/**
 * Keeps a slot for a while (DESIGN.md section 11): the hold claims the time in the calendar, as an
 * appointment does, until `expires_at`; a registered practitioner must work then (no override:
 * holds are for the portal). A patient named must be the company's. A used Idempotency-Key replays.
 */
export async function createHold(
  ctx: Ctx,
  deps: HoldDeps,
  input: { body: CreateHoldInput; idempotencyKey: string | undefined; requestHash: string },
): Promise<StoredResponse<Hold>> {
  const body = input.body
  assertCenter(ctx.auth, body.codalmacen)
  const idempotency = idempotencyOf(ctx, input)
  const stored = await deps.store.storedResponse<Hold>(ctx.auth.companyId, idempotency)
  if (stored) return stored
  const patientId = body.patient_id?.toLowerCase() ?? null
  if (patientId && !(await deps.patients.find(ctx, patientId))) throw new UnknownPatient()
  const span: Span = {
    practitioner: body.practitioner,
    center: body.codalmacen,
    starts_at: toUtc(body.starts_at),
    ends_at: toUtc(body.ends_at),
  }
  let registered = false
  const work = () =>
    deps.store.idempotent(ctx.auth.companyId, idempotency, async (tx) => {
      registered = (await checkWorking(tx, span, false, false)).registered
      const expires = new Date(deps.clock().getTime() + deps.holdTtlSeconds * 1000)
      const hold = await tx.insertHold({
        id: uuidv7(),
        practitioner: span.practitioner,
        codalmacen: span.center,
        starts_at: span.starts_at,
        ends_at: span.ends_at,
        patient_id: patientId,
        expires_at: expires.toISOString(),
      })
      return { body: hold }
    })
  const result = await explainingConflicts(ctx, deps.store, work, () => ({ span, registered }))
  ctx.log.info({ hold_id: result.body.id, replayed: !!result.replayed }, 'slot held')
  return result
}

/**
 * Releases a live hold of the caller's company, at the center of `?codalmacen=` (when given) and
 * the token's centers; anything else is 404.
 */
export async function releaseHold(
  ctx: Ctx,
  store: AppointmentStore,
  input: { id: string; queryCenter: string | undefined },
): Promise<void> {
  const centers = visibleCenters(ctx.auth, input.queryCenter)
  const id = input.id.toLowerCase()
  const released = await store.transaction(ctx.auth.companyId, (tx) => tx.releaseHold(id, centers))
  if (!released) throw new NotFound('No such hold (or it has expired)')
  ctx.log.info({ hold_id: id }, 'hold released')
}
