import {
  CenterForbidden,
  NotFound,
  VersionMismatch,
  assertCenter,
  ifMatchAllows,
  keyset,
  keysetPage,
  visibleCenters,
  type Ctx,
  type Page,
  type StoredResponse,
  idempotencyOf,
} from '@clinic/platform/core'
import { practitionerEvent } from '../events/practitioner-events'
import {
  DEFAULT_SLOT_MINUTES,
  type CreatePractitionerInput,
  type ListPractitionersInput,
  type Practitioner,
  type PractitionerFields,
  type UpdatePractitionerInput,
  type WorkingHours,
} from '../schemas/practitioner'
import { DEFAULT_TIME_ZONE } from '../schemas/appointment'
import type { PractitionerStore } from './practitioner-store'
import { canonicalTimeZone } from './rules'

export const PRACTITIONER_KEYSET = keyset({ order: 'asc', columns: [{ name: 'id', kind: 'text' }] })
export const TIME_OFF_KEYSET = keyset({
  order: 'asc',
  columns: [
    { name: 'starts_at', kind: 'instant' },
    { name: 'id', kind: 'uuid' },
  ],
})

/**
 * A practitioner is seen by a token limited to centers when they work at one of its centers
 * (`visible`: visibleCenters); anyone else is 404, as another company's.
 */
export function seenPractitioner(visible: string[] | null, p: Practitioner | null): Practitioner {
  if (p && (visible === null || p.working_hours.some((h) => visible.includes(h.codalmacen)))) return p
  throw new NotFound('No such practitioner')
}

/**
 * Every center named in hours must be the company's and one the token may use: a token limited to
 * centers writes only the schedules of its centers (DESIGN.md section 2).
 */
function assertHoursCenters(ctx: Ctx, hours: WorkingHours[]) {
  for (const code of new Set(hours.map((h) => h.codalmacen))) assertCenter(ctx.auth, code)
}

export async function createPractitioner(
  ctx: Ctx,
  store: PractitionerStore,
  input: { body: CreatePractitionerInput; idempotencyKey: string | undefined; requestHash: string },
): Promise<StoredResponse<Practitioner>> {
  const b = input.body
  const hours = b.working_hours ?? []
  assertHoursCenters(ctx, hours)
  const fields: PractitionerFields = {
    name: b.name,
    time_zone: canonicalTimeZone(b.time_zone ?? DEFAULT_TIME_ZONE) ?? DEFAULT_TIME_ZONE,
    slot_minutes: b.slot_minutes ?? DEFAULT_SLOT_MINUTES,
    working_hours: hours,
    active: b.active ?? true,
  }
  const idempotency = idempotencyOf(ctx, input)
  const result = await store.idempotent(ctx.auth.companyId, idempotency, async (tx) => {
    const practitioner = await tx.insert(b.id, fields)
    await tx.publish([practitionerEvent(ctx, 'practitioner.created', practitioner)])
    return { body: practitioner }
  })
  ctx.log.info({ practitioner_id: result.body.id, replayed: !!result.replayed }, 'practitioner registered')
  return result
}

export async function getPractitioner(
  ctx: Ctx,
  store: PractitionerStore,
  input: { id: string; queryCenter: string | undefined },
): Promise<Practitioner> {
  const visible = visibleCenters(ctx.auth, input.queryCenter)
  return seenPractitioner(visible, await store.findById(ctx.auth.companyId, input.id))
}

export function listPractitioners(
  ctx: Ctx,
  store: PractitionerStore,
  input: ListPractitionersInput,
): Promise<Page<Practitioner>> {
  return keysetPage(input, {
    keyset: PRACTITIONER_KEYSET,
    filter: () => ({ centers: visibleCenters(ctx.auth, input.codalmacen), active: input.active }),
    fetch: (filter, page) => store.list(ctx.auth.companyId, { ...filter, ...page }),
  })
}

const PATCHABLE = ['name', 'time_zone', 'slot_minutes', 'working_hours', 'active'] as const

/**
 * Changes only the fields sent (equal values are no change: no new version, no event). A token
 * limited to centers may change a practitioner only if every center of the hours before and after
 * is one of its own.
 */
export async function updatePractitioner(
  ctx: Ctx,
  store: PractitionerStore,
  input: {
    id: string
    patch: UpdatePractitionerInput
    queryCenter: string | undefined
    ifMatch: string | undefined
  },
): Promise<Practitioner> {
  const visible = visibleCenters(ctx.auth, input.queryCenter)
  if (input.patch.working_hours) assertHoursCenters(ctx, input.patch.working_hours)
  return store.transaction(ctx.auth.companyId, async (tx) => {
    const current = seenPractitioner(visible, await tx.findById(input.id, { forUpdate: true }))
    assertMayWrite(ctx, current)
    if (input.ifMatch !== undefined && !ifMatchAllows(input.ifMatch, current.version))
      throw new VersionMismatch()
    const next: Partial<PractitionerFields> = { ...input.patch }
    if (next.time_zone) next.time_zone = canonicalTimeZone(next.time_zone) ?? next.time_zone
    const changes = PATCHABLE.filter(
      (k) => next[k] !== undefined && JSON.stringify(next[k]) !== JSON.stringify(current[k]),
    )
    if (!changes.length) return current
    const values = Object.fromEntries(changes.map((k) => [k, next[k]])) as Partial<PractitionerFields>
    const updated = await tx.update(current.id, values)
    await tx.publish([practitionerEvent(ctx, 'practitioner.updated', updated, changes)])
    ctx.log.info({ practitioner_id: updated.id, changes }, 'practitioner updated')
    return updated
  })
}

/** A token limited to centers writes a practitioner only when every center they work at is its own. */
export function assertMayWrite(ctx: Ctx, p: Practitioner) {
  const allowed = ctx.auth.allowedCenters
  if (allowed && p.working_hours.some((h) => !allowed.includes(h.codalmacen))) throw new CenterForbidden()
}
