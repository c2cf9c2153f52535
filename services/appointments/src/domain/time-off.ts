import {
  NotFound,
  keysetPage,
  uuidv7,
  visibleCenters,
  type Ctx,
  type Page,
  type StoredResponse,
  idempotencyOf,
} from '@clinic/platform/core'
import type { CreateTimeOffInput, ListTimeOffInput, TimeOff } from '../schemas/practitioner'
import type { PractitionerStore, PractitionerTx } from './practitioner-store'
import { TIME_OFF_KEYSET, assertMayWrite, seenPractitioner } from './practitioners'
import { toUtc } from './rules'

/** The practitioner `id` as the caller may see it, locked in `tx` (404 otherwise). */
async function writable(ctx: Ctx, tx: PractitionerTx, id: string, queryCenter: string | undefined) {
  const p = seenPractitioner(
    visibleCenters(ctx.auth, queryCenter),
    await tx.findById(id, { forUpdate: true }),
  )
  assertMayWrite(ctx, p)
  return p
}

/** Time off blocks bookings and availability (DESIGN.md section 11); existing appointments stay. */
export async function addTimeOff(
  ctx: Ctx,
  store: PractitionerStore,
  input: {
    practitioner: string
    body: CreateTimeOffInput
    queryCenter: string | undefined
    idempotencyKey: string | undefined
    requestHash: string
  },
): Promise<StoredResponse<TimeOff>> {
  const idempotency = idempotencyOf(ctx, input)
  const result = await store.idempotent(ctx.auth.companyId, idempotency, async (tx) => {
    const p = await writable(ctx, tx, input.practitioner, input.queryCenter)
    const timeOff = await tx.addTimeOff({
      id: uuidv7(),
      practitioner: p.id,
      starts_at: toUtc(input.body.starts_at),
      ends_at: toUtc(input.body.ends_at),
      reason: input.body.reason ?? null,
    })
    return { body: timeOff }
  })
  ctx.log.info({ practitioner_id: input.practitioner, time_off_id: result.body.id }, 'time off added')
  return result
}

export async function listTimeOff(
  ctx: Ctx,
  store: PractitionerStore,
  input: ListTimeOffInput & { practitioner: string },
): Promise<Page<TimeOff>> {
  const p = seenPractitioner(
    visibleCenters(ctx.auth, input.codalmacen),
    await store.findById(ctx.auth.companyId, input.practitioner),
  )
  return keysetPage(input, {
    keyset: TIME_OFF_KEYSET,
    filter: () => ({
      practitioner: p.id,
      from: input.from && toUtc(input.from),
      to: input.to && toUtc(input.to),
    }),
    fetch: (filter, page) => store.listTimeOff(ctx.auth.companyId, { ...filter, ...page }),
  })
}

export async function deleteTimeOff(
  ctx: Ctx,
  store: PractitionerStore,
  input: { practitioner: string; id: string; queryCenter: string | undefined },
): Promise<void> {
  await store.transaction(ctx.auth.companyId, async (tx) => {
    const p = await writable(ctx, tx, input.practitioner, input.queryCenter)
    if (!(await tx.deleteTimeOff(p.id, input.id.toLowerCase()))) throw new NotFound('No such time off')
  })
  ctx.log.info({ practitioner_id: input.practitioner, time_off_id: input.id }, 'time off removed')
}
