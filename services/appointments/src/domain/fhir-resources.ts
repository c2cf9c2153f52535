import {
  codesIn,
  fhirPageOf,
  ValidationFailed,
  centerOfLocationId,
  centerVisible,
  visibleCenters,
  type Ctx,
  type FhirPage,
  type FhirSearch,
} from '@clinic/platform/core'
import type {
  Appointment as FhirAppointment,
  Practitioner as FhirPractitioner,
  Schedule as FhirSchedule,
  Slot as FhirSlot,
} from '@medplum/fhirtypes'
import type { AppointmentStatus } from '../schemas/appointment'
import {
  APPOINTMENT_STATUS_SYSTEM,
  FHIR_APPOINTMENT_STATUS,
  SLOT_STATUS_SYSTEM,
  toFhirAppointment,
  toFhirPractitioner,
  toFhirSchedule,
  toFhirSlot,
} from './fhir-mapping'
import type { FhirStore, SlotQuery, SlotRow } from './fhir-store'

/**
 * The FHIR R4 read and search use cases of Practitioner, Schedule, Slot and Appointment
 * (DESIGN.md section 19; the mapping and the ids: fhir-mapping.ts). A token limited to centers
 * sees the practitioners who work at one of its centers, and the schedules, slots and
 * appointments of its centers; another company's rows never (every statement is the company's).
 */

/** The Slot search's window when `start` gives no bounds, and the widest window searched. */
export const SLOT_WINDOW_DAYS = 14
export const MAX_SLOT_WINDOW_DAYS = 31
const DAY = 86_400_000

const centersOf = (ctx: Ctx) => visibleCenters(ctx.auth, undefined)

export async function readFhirPractitioner(ctx: Ctx, store: FhirStore, id: string) {
  const p = await store.practitioner(ctx.auth.companyId, centersOf(ctx), id)
  return p && toFhirPractitioner(p)
}
export async function searchFhirPractitioners(
  ctx: Ctx,
  store: FhirStore,
  s: FhirSearch,
): Promise<FhirPage<FhirPractitioner>> {
  return fhirPageOf(await store.practitioners(ctx.auth.companyId, centersOf(ctx), s), toFhirPractitioner)
}

export async function readFhirSchedule(ctx: Ctx, store: FhirStore, id: string) {
  const s = await store.schedule(ctx.auth.companyId, centersOf(ctx), id)
  return s && toFhirSchedule(s)
}
export async function searchFhirSchedules(
  ctx: Ctx,
  store: FhirStore,
  s: FhirSearch,
): Promise<FhirPage<FhirSchedule>> {
  return fhirPageOf(await store.schedules(ctx.auth.companyId, centersOf(ctx), s), toFhirSchedule)
}

const START_KEY = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(?:(\d{2})(\d{3})?)?Z$/

/** A Slot id's schedule and start, or null when it is not one of ours. */
export function parseSlotId(id: string): { schedule: string; start: Date } | null {
  const dot = id.lastIndexOf('.')
  const m = START_KEY.exec(id.slice(dot + 1))
  if (dot <= 0 || !m) return null
  const [, y, mo, d, h, mi, s, ms] = m
  const start = new Date(`${y}-${mo}-${d}T${h}:${mi}:${s ?? '00'}.${ms ?? '000'}Z`)
  return Number.isNaN(start.getTime()) ? null : { schedule: id.slice(0, dot), start }
}

/** `GET /fhir/R4/Slot/<id>`: the slot of that schedule at that time, free or busy, else null. */
export async function readFhirSlot(ctx: Ctx, store: FhirStore, id: string, now: Date) {
  const parsed = parseSlotId(id)
  if (!parsed) return null
  const at = parsed.start.getTime()
  const slot = await store.slot(
    ctx.auth.companyId,
    {
      centers: centersOf(ctx),
      schedules: [[parsed.schedule]],
      statuses: [],
      from: new Date(at).toISOString(),
      to: new Date(at + 1).toISOString(),
      now: now.toISOString(),
    },
    id,
  )
  return slot && toFhirSlot(slot)
}

/**
 * The window a Slot search reads: slots are computed (the working hours' grid minus what is
 * taken, and what is taken), so a search reads a bounded stretch of time: from its `start` lower
 * bound (default now) to its upper bound (default 14 days later), at most 31 days; with `_id` and
 * no `start`, the stretch of the named slots. Free slots are never in the past.
 */
export function slotWindow(s: FhirSearch, now: Date): { from: number; to: number } {
  const bounds = s.dates('start')
  const lower = bounds.filter((b) => b.op === '>=').map((b) => Date.parse(b.at))
  const upper = bounds.filter((b) => b.op === '<').map((b) => Date.parse(b.at))
  let from: number
  let to: number
  if (s.ids && !bounds.length) {
    const starts = s.ids.flatMap((id) => parseSlotId(id)?.start.getTime() ?? [])
    if (!starts.length) return { from: 0, to: 0 }
    from = Math.min(...starts)
    to = Math.max(...starts) + 1
  } else {
    from = lower.length ? Math.max(...lower) : now.getTime()
    to = upper.length ? Math.min(...upper) : from + SLOT_WINDOW_DAYS * DAY
  }
  if (to - from > MAX_SLOT_WINDOW_DAYS * DAY)
    throw new ValidationFailed(
      [
        {
          path: s.ids && !bounds.length ? '/_id' : '/start',
          message: `slots are searched over at most ${MAX_SLOT_WINDOW_DAYS} days (give start=ge...&start=lt...)`,
        },
      ],
      'The search is not valid',
    )
  return { from, to }
}

/** `GET /fhir/R4/Slot?...`: the slots of the window (slotWindow) of the visible schedules. */
export async function searchFhirSlots(
  ctx: Ctx,
  store: FhirStore,
  s: FhirSearch,
  now: Date,
): Promise<FhirPage<FhirSlot>> {
  const { from, to } = slotWindow(s, now)
  if (to <= from) return { resources: [], total: 0, next: null }
  const schedules = s.references('schedule').map((alts) => alts.map((r) => r.id))
  // The named slots' schedules: only those are computed.
  if (s.ids) schedules.push(s.ids.flatMap((id) => parseSlotId(id)?.schedule ?? []))
  const q: SlotQuery = {
    centers: centersOf(ctx),
    schedules,
    statuses: s
      .tokens('status')
      .map((alts) =>
        codesIn(alts, SLOT_STATUS_SYSTEM).filter((c): c is SlotRow['status'] => c === 'free' || c === 'busy'),
      ),
    from: new Date(from).toISOString(),
    to: new Date(to).toISOString(),
    now: now.toISOString(),
  }
  return fhirPageOf(await store.slots(ctx.auth.companyId, q, s), toFhirSlot)
}

export async function readFhirAppointment(ctx: Ctx, store: FhirStore, id: string) {
  const a = await store.appointment(ctx.auth.companyId, centersOf(ctx), id)
  return a && centerVisible(centersOf(ctx), a.codalmacen) ? toFhirAppointment(a) : null
}

/** Our statuses a FHIR status code stands for (the inverse of FHIR_APPOINTMENT_STATUS). */
const ourStatuses = (code: string) =>
  (Object.keys(FHIR_APPOINTMENT_STATUS) as AppointmentStatus[]).filter(
    (s) => FHIR_APPOINTMENT_STATUS[s] === code,
  )

/** `GET /fhir/R4/Appointment?...`: patient, practitioner, date (the start), status, location. */
export async function searchFhirAppointments(
  ctx: Ctx,
  store: FhirStore,
  s: FhirSearch,
): Promise<FhirPage<FhirAppointment>> {
  const ids = (name: string) => s.references(name).map((alts) => alts.map((r) => r.id))
  const rows = await store.appointments(
    ctx.auth.companyId,
    {
      centers: centersOf(ctx),
      locations: ids('location').map((alts) => alts.map(centerOfLocationId)),
      patients: ids('patient'),
      practitioners: ids('practitioner'),
      statuses: s
        .tokens('status')
        .map((alts) => codesIn(alts, APPOINTMENT_STATUS_SYSTEM).flatMap(ourStatuses)),
      starts: s.dates('date'),
    },
    s,
  )
  return fhirPageOf(rows, toFhirAppointment)
}
