import {
  NotFound,
  ValidationFailed,
  keysetPage,
  traceOfCause,
  type Ctx,
  type Page,
} from '@clinic/platform/core'
import type { Delivery, ListDeliveriesInput } from '../schemas/endpoint'
import type { EndpointStore } from './endpoint-store'
import { seenEndpoint, type EndpointDeps, type EndpointTarget } from './endpoints'
import { DELIVERY_KEYSET } from './keysets'

/**
 * An endpoint's delivery log, newest first. The endpoint must be one the caller sees under
 * `?codalmacen=` and the token's centers (else 404, as a practitioner's time off).
 */
export async function listDeliveries(
  ctx: Ctx,
  store: EndpointStore,
  input: ListDeliveriesInput & { endpointId: string },
): Promise<Page<Delivery>> {
  seenEndpoint(ctx, await store.findById(ctx.auth.companyId, input.endpointId), input.codalmacen)
  return keysetPage(input, {
    keyset: DELIVERY_KEYSET,
    filter: () => ({ endpointId: input.endpointId, status: input.status, eventType: input.event_type }),
    fetch: (filter, page) => store.listDeliveries(ctx.auth.companyId, { ...filter, ...page }),
  })
}

/** DESIGN.md section 10: a replay reaches at most 7 days back. */
export const REPLAY_WINDOW_MS = 7 * 24 * 60 * 60 * 1000

export async function replay(
  ctx: Ctx,
  deps: EndpointDeps,
  input: EndpointTarget & { since: string },
): Promise<{ accepted: number }> {
  const now = deps.clock()
  const since = new Date(input.since)
  if (now.getTime() - since.getTime() > REPLAY_WINDOW_MS)
    throw new ValidationFailed([{ path: '/since', message: 'must be at most 7 days ago' }])
  return deps.store.transaction(ctx.auth.companyId, async (tx) => {
    // Locked, as sendTest: the deliveries it queues need their endpoint until this commits.
    const e = seenEndpoint(ctx, await tx.findById(input.id, { forUpdate: true }), input.queryCenter)
    return { accepted: await tx.replay(e, since, now, traceOfCause(ctx)) }
  })
}

/** Sends a delivery again now; its endpoint must be one the caller sees (as `listDeliveries`). */
export async function retryDelivery(
  ctx: Ctx,
  deps: EndpointDeps,
  target: EndpointTarget,
): Promise<{ accepted: number }> {
  const { id } = target
  const delivery = await deps.store.findDelivery(ctx.auth.companyId, id)
  if (!delivery) throw new NotFound('No such delivery')
  return deps.store.transaction(ctx.auth.companyId, async (tx) => {
    seenEndpoint(ctx, await tx.findById(delivery.endpoint_id), target.queryCenter)
    return { accepted: await tx.retryDelivery(id, deps.clock(), traceOfCause(ctx)) }
  })
}
