import {
  CenterForbidden,
  NotFound,
  VersionMismatch,
  assertCenter,
  idempotencyOf,
  ifMatchAllows,
  keysetPage,
  traceOfCause,
  uuidv7,
  visibleCenters,
  visibleRow,
  type Ctx,
  type Page,
  type StoredResponse,
} from '@clinic/platform/core'
import { UnsafeAddress, checkedAddresses, urlProblem, type AddressPolicy } from '../delivery/address-policy'
import { endpointEvent } from '../events/endpoint-events'
import {
  MAX_ENDPOINTS,
  type CreateEndpointInput,
  type Endpoint,
  type EndpointWithSecret,
  type ListEndpointsInput,
  type UpdateEndpointInput,
} from '../schemas/endpoint'
import { TEST_EVENT_TYPE, testData } from './catalogue'
import type { EndpointChange, EndpointStore } from './endpoint-store'
import { EndpointLimitReached, UnsafeUrl } from './errors'
import { ENDPOINT_KEYSET } from './keysets'
import { newSecret, type SecretBox } from './secrets'

export interface EndpointDeps {
  store: EndpointStore
  box: SecretBox
  policy: AddressPolicy
  clock: () => Date
}

/** After a rotation the old secret signs too, for a day (DESIGN.md section 10). */
export const ROTATION_OVERLAP_MS = 24 * 60 * 60 * 1000

/**
 * What can be known of a URL now: https (unless insecure is allowed), no credentials, and every
 * address its name has today public. A name that does not resolve now is taken (each attempt
 * checks again).
 */
export async function assertSafeUrl(url: string, policy: AddressPolicy): Promise<void> {
  const problem = urlProblem(url, policy.allowInsecure)
  if (problem) throw new UnsafeUrl(problem)
  try {
    await checkedAddresses(new URL(url), policy)
  } catch (err) {
    if (err instanceof UnsafeAddress) throw new UnsafeUrl(err.message)
  }
}

/** A token limited to centers manages only endpoints of its centers, so it must name one. */
function assertEndpointCenter(ctx: Ctx, codalmacen: string | null) {
  if (codalmacen !== null) assertCenter(ctx.auth, codalmacen)
  else if (ctx.auth.allowedCenters) throw new CenterForbidden()
}

const eventTypesOf = (types: string[]) => (types.includes('*') ? ['*'] : types)

/**
 * One endpoint as a request names it: its id, and the center of `?codalmacen=` (DESIGN.md section 2:
 * an endpoint outside the center asked for is 404, as on every read-one).
 */
export interface EndpointTarget {
  id: string
  queryCenter?: string | undefined
}

/**
 * The endpoint if the caller may see it (its center among `?codalmacen=` and the token's centers;
 * with neither, any), else 404.
 */
export const seenEndpoint = (ctx: Ctx, e: Endpoint | null, queryCenter?: string): Endpoint =>
  visibleRow(visibleCenters(ctx.auth, queryCenter), e, 'No such webhook endpoint')

export async function createEndpoint(
  ctx: Ctx,
  deps: EndpointDeps,
  input: {
    body: CreateEndpointInput
    /** `?codalmacen=`: the center when the body names none (DESIGN.md section 2). */
    queryCenter?: string | undefined
    idempotencyKey: string | undefined
    requestHash: string
  },
): Promise<StoredResponse<EndpointWithSecret>> {
  const b = input.body
  const codalmacen = b.codalmacen === undefined ? (input.queryCenter ?? null) : b.codalmacen
  assertEndpointCenter(ctx, codalmacen)
  await assertSafeUrl(b.url, deps.policy)
  const id = uuidv7()
  const secret = newSecret()
  // The stored answer of an Idempotency-Key has no secret: it is kept sealed on the endpoint only.
  const result = await deps.store.idempotent(ctx.auth.companyId, idempotencyOf(ctx, input), async (tx) => {
    if ((await tx.countLocked()) >= MAX_ENDPOINTS) throw new EndpointLimitReached(MAX_ENDPOINTS)
    const endpoint = await tx.insert(
      {
        id,
        url: b.url,
        event_types: eventTypesOf(b.event_types),
        codalmacen,
        description: b.description ?? null,
      },
      deps.box.seal(secret, id),
    )
    await tx.publish([endpointEvent(ctx, 'webhooks.endpoint.created', endpoint)])
    return { body: endpoint }
  })
  if (!result.replayed) {
    ctx.log.info({ endpoint_id: id }, 'webhook endpoint created')
    return { body: { ...result.body, secret } }
  }
  const replayedId = result.body.id
  return deps.store.transaction(ctx.auth.companyId, async (tx) => {
    const endpoint = seenEndpoint(ctx, await tx.findById(replayedId))
    const sealed = await tx.sealedSecret(replayedId)
    if (!sealed) throw new NotFound('No such webhook endpoint')
    return { body: { ...endpoint, secret: deps.box.open(sealed, replayedId) }, replayed: true }
  })
}

export async function getEndpoint(ctx: Ctx, store: EndpointStore, target: EndpointTarget): Promise<Endpoint> {
  return seenEndpoint(ctx, await store.findById(ctx.auth.companyId, target.id), target.queryCenter)
}

export function listEndpoints(
  ctx: Ctx,
  store: EndpointStore,
  input: ListEndpointsInput,
): Promise<Page<Endpoint>> {
  return keysetPage(input, {
    keyset: ENDPOINT_KEYSET,
    filter: () => ({ centers: visibleCenters(ctx.auth, input.codalmacen), status: input.status }),
    fetch: (filter, page) => store.list(ctx.auth.companyId, { ...filter, ...page }),
  })
}

const PATCHABLE = ['url', 'event_types', 'codalmacen', 'description', 'status'] as const

/**
 * Changes the fields sent (equal values are no change). `status: enabled` clears disabled_reason
 * and lets the pending deliveries go; `disabled` holds them.
 */
export async function updateEndpoint(
  ctx: Ctx,
  deps: EndpointDeps,
  input: EndpointTarget & { patch: UpdateEndpointInput; ifMatch: string | undefined },
): Promise<Endpoint> {
  const next: EndpointChange = { ...input.patch }
  if (next.event_types) next.event_types = eventTypesOf(next.event_types)
  if (next.codalmacen !== undefined) assertEndpointCenter(ctx, next.codalmacen)
  if (next.url !== undefined) await assertSafeUrl(next.url, deps.policy)
  return deps.store.transaction(ctx.auth.companyId, async (tx) => {
    const current = seenEndpoint(ctx, await tx.findById(input.id, { forUpdate: true }), input.queryCenter)
    if (input.ifMatch !== undefined && !ifMatchAllows(input.ifMatch, current.version))
      throw new VersionMismatch()
    const changes = PATCHABLE.filter(
      (k) => next[k] !== undefined && JSON.stringify(next[k]) !== JSON.stringify(current[k]),
    )
    if (!changes.length) return current
    const values: EndpointChange = Object.fromEntries(changes.map((k) => [k, next[k]]))
    if (values.status === 'enabled') values.disabled_reason = null
    if (values.status === 'disabled') values.disabled_reason = 'disabled through the API'
    const updated = await tx.update(current.id, values)
    await tx.publish([endpointEvent(ctx, 'webhooks.endpoint.updated', updated, [...changes])])
    ctx.log.info({ endpoint_id: updated.id, changes }, 'webhook endpoint updated')
    return updated
  })
}

export async function deleteEndpoint(ctx: Ctx, store: EndpointStore, target: EndpointTarget): Promise<void> {
  const { id } = target
  await store.transaction(ctx.auth.companyId, async (tx) => {
    const current = seenEndpoint(ctx, await tx.findById(id, { forUpdate: true }), target.queryCenter)
    await tx.remove(id)
    await tx.publish([endpointEvent(ctx, 'webhooks.endpoint.deleted', current)])
  })
  ctx.log.info({ endpoint_id: id }, 'webhook endpoint deleted')
}

/** A new secret, answered once; the old one signs too for ROTATION_OVERLAP_MS. */
export async function rotateSecret(
  ctx: Ctx,
  deps: EndpointDeps,
  target: EndpointTarget,
): Promise<EndpointWithSecret> {
  const { id } = target
  const secret = newSecret()
  const endpoint = await deps.store.transaction(ctx.auth.companyId, async (tx) => {
    seenEndpoint(ctx, await tx.findById(id, { forUpdate: true }), target.queryCenter)
    await tx.rotate(id, deps.box.seal(secret, id), new Date(deps.clock().getTime() + ROTATION_OVERLAP_MS))
    const updated = await tx.update(id, {})
    await tx.publish([endpointEvent(ctx, 'webhooks.endpoint.updated', updated, ['secret'])])
    return updated
  })
  ctx.log.info({ endpoint_id: id }, 'webhook secret rotated')
  return { ...endpoint, secret }
}

/** Queues a `webhook.test` event to this endpoint alone. */
export async function sendTest(
  ctx: Ctx,
  deps: EndpointDeps,
  target: EndpointTarget,
): Promise<{ accepted: number }> {
  const now = deps.clock()
  return deps.store.transaction(ctx.auth.companyId, async (tx) => {
    // Locked: a delete committing meanwhile would leave the delivery without its endpoint (a 500).
    const e = seenEndpoint(ctx, await tx.findById(target.id, { forUpdate: true }), target.queryCenter)
    const event = {
      id: uuidv7(),
      type: TEST_EVENT_TYPE,
      codalmacen: e.codalmacen,
      occurred_at: now.toISOString(),
      data: testData(e.id, e.codalmacen),
    }
    return { accepted: await tx.queueEvent(event, [e.id], now, traceOfCause(ctx)) }
  })
}
