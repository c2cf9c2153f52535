import {
  UnknownPatient,
  ValidationFailed,
  assertCenter,
  findVisible,
  idempotencyOf,
  keyset,
  keysetPage,
  uuidv7,
  visibleCenters,
  type Ctx,
  type Page,
  type StoredResponse,
} from '@clinic/platform/core'
import { entryEvent } from '../events/waitlist-events'
import { DEFAULT_TIME_ZONE } from '../schemas/appointment'
import {
  WEEKDAYS,
  type CreateWaitlistEntryInput,
  type ListWaitlistInput,
  type WaitlistEntry,
} from '../schemas/waitlist'
import type { PatientDirectory } from './directories'
import { InvalidTransition } from './errors'
import { canonicalTimeZone, toUtc } from './rules'
import type { WaitlistStore, WaitlistTx } from './waitlist-store'

/** The waitlist (DESIGN.md section 20): entries, earliest first. */
export const WAITLIST_KEYSET = keyset({
  tag: 'w',
  order: 'asc',
  columns: [
    { name: 'created_at', kind: 'instant' },
    { name: 'id', kind: 'uuid' },
  ],
})

const NOT_FOUND = 'No such waitlist entry'

/** What a body says that its schema cannot: a window that ends after it starts, a real zone. */
function entryErrors(b: CreateWaitlistEntryInput) {
  const errors = []
  if (b.earliest && b.latest && Date.parse(b.latest) <= Date.parse(b.earliest))
    errors.push({ path: '/latest', message: 'must be after earliest' })
  if (b.times && b.times.to <= b.times.from) errors.push({ path: '/times/to', message: 'must be after from' })
  if (b.time_zone && canonicalTimeZone(b.time_zone) === null)
    errors.push({ path: '/time_zone', message: 'must be an IANA time zone name, e.g. Europe/Madrid' })
  return errors
}

/**
 * Puts a patient of the company on the waitlist (`waiting`): the next freed slot that fits is
 * offered to the first matching entry, by priority then age. A used Idempotency-Key replays.
 */
export async function createEntry(
  ctx: Ctx,
  deps: { store: WaitlistStore; patients: PatientDirectory },
  input: { body: CreateWaitlistEntryInput; idempotencyKey: string | undefined; requestHash: string },
): Promise<StoredResponse<WaitlistEntry>> {
  const b = input.body
  assertCenter(ctx.auth, b.codalmacen)
  const errors = entryErrors(b)
  if (errors.length) throw new ValidationFailed(errors)
  const idempotency = idempotencyOf(ctx, input)
  const stored = await deps.store.storedResponse<WaitlistEntry>(ctx.auth.companyId, idempotency)
  if (stored) return stored
  const patientId = b.patient_id.toLowerCase()
  if (!(await deps.patients.find(ctx, patientId))) throw new UnknownPatient()
  const result = await deps.store.idempotent(ctx.auth.companyId, idempotency, async (tx) => {
    const entry = await tx.insertEntry({
      id: uuidv7(),
      patient_id: patientId,
      codalmacen: b.codalmacen,
      practitioner: b.practitioner ?? null,
      duration_minutes: b.duration_minutes,
      earliest: b.earliest ? toUtc(b.earliest) : null,
      latest: b.latest ? toUtc(b.latest) : null,
      days: b.days ? b.days.map((d) => WEEKDAYS.indexOf(d) + 1) : null,
      times: b.times ?? null,
      time_zone: canonicalTimeZone(b.time_zone ?? DEFAULT_TIME_ZONE) ?? DEFAULT_TIME_ZONE,
      priority: b.priority ?? 0,
      channel: b.channel ?? null,
      notes: b.notes ?? null,
    })
    await tx.publish([entryEvent(ctx, 'waitlist.entry.created', entry)])
    return { body: entry }
  })
  ctx.log.info({ waitlist_entry_id: result.body.id, replayed: !!result.replayed }, 'waitlist entry created')
  return result
}

export const getEntry = (ctx: Ctx, store: WaitlistStore, id: string, queryCenter?: string) =>
  findVisible(ctx, store, id.toLowerCase(), { queryCenter, notFound: NOT_FOUND })

export function listEntries(
  ctx: Ctx,
  store: WaitlistStore,
  input: ListWaitlistInput,
): Promise<Page<WaitlistEntry>> {
  return keysetPage(input, {
    keyset: WAITLIST_KEYSET,
    filter: () => ({
      centers: visibleCenters(ctx.auth, input.codalmacen),
      status: input.status,
      practitioner: input.practitioner,
      patientId: input.patient_id?.toLowerCase(),
    }),
    fetch: (filter, page) => store.entries(ctx.auth.companyId, { ...filter, ...page }),
  })
}

/**
 * Takes an entry off the waitlist (`cancelled`): an open offer is withdrawn and its slot released
 * (offered to the next entry). A booked entry keeps its appointment (cancel that instead): 409.
 */
export async function cancelEntry(ctx: Ctx, store: WaitlistStore, id: string, queryCenter?: string) {
  await getEntry(ctx, store, id, queryCenter)
  await store.transaction(ctx.auth.companyId, async (tx) => {
    const entry = (await tx.entryById(id.toLowerCase(), true))!
    if (entry.status === 'cancelled') return
    if (entry.status === 'booked' || entry.status === 'expired')
      throw new InvalidTransition(`The entry is ${entry.status}: it cannot be cancelled`)
    await withdrawOffer(tx, entry)
    const cancelled = await tx.setEntry(entry.id, 'cancelled')
    await tx.publish([entryEvent(ctx, 'waitlist.entry.cancelled', cancelled)])
  })
  ctx.log.info({ waitlist_entry_id: id }, 'waitlist entry cancelled')
}

async function withdrawOffer(tx: WaitlistTx, entry: WaitlistEntry) {
  if (!entry.offer) return
  await tx.setOffer(entry.offer.id, 'withdrawn')
  await tx.deleteHold(entry.offer.id)
}
