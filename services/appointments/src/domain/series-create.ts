import {
  UnknownPatient,
  ValidationFailed,
  assertCenter,
  findVisible,
  idempotencyOf,
  uuidv7,
  type CloudEvent,
  type Ctx,
  type FieldError,
  type StoredResponse,
} from '@clinic/platform/core'
import { appointmentCreated } from '../events/appointment-events'
import { seriesCreated } from '../events/series-events'
import { DEFAULT_TIME_ZONE, type Appointment, type AppointmentFields } from '../schemas/appointment'
import type { CreateSeriesInput, Series } from '../schemas/series'
import { spanOf } from './book-appointment'
import { SlotConflict } from './errors'
import type { PatientDirectory } from './directories'
import { canonicalTimeZone, newAppointmentFields } from './rules'
import {
  SeriesConflict,
  UnclaimedOccurrences,
  claimOccurrence,
  explainConflicts,
  type Claim,
  skippedOf,
  type FoundConflict,
} from './series-conflicts'
import { planSeries, type Plan, type PlannedOccurrence } from './series-plan'
import { SERIES_NOT_FOUND, present } from './series-read'
import { parseRule } from './series-rule'
import type { SeriesStore, SeriesTx } from './series-store'
import { parseStart, wallText, zoneOffsetError } from './series-zone'

export interface CreateSeries {
  /** Checked against the schema and seriesBodyErrors by the route. */
  body: CreateSeriesInput
  idempotencyKey: string | undefined
  requestHash: string
}

interface Deps {
  store: SeriesStore
  patients: PatientDirectory
  clock: () => Date
}

/** What the schema cannot check of a create body (the route lists these with the schema's errors). */
export function seriesBodyErrors(body: unknown): FieldError[] {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return []
  const b = body as Record<string, unknown>
  const errors: FieldError[] = []
  if (typeof b.start === 'string' && b.start.length <= 40) {
    const start = parseStart(b.start)
    if ('error' in start) errors.push({ path: '/start', message: start.error })
  }
  if (typeof b.rrule === 'string' && b.rrule.length <= 500) {
    const rule = parseRule(b.rrule)
    if ('errors' in rule) errors.push(...rule.errors.map((message) => ({ path: '/rrule', message })))
  }
  if (typeof b.time_zone === 'string' && b.time_zone.length <= 64 && canonicalTimeZone(b.time_zone) === null)
    errors.push({ path: '/time_zone', message: 'is not a time zone this service knows (IANA name)' })
  return errors
}

/**
 * The series' zone: a registered practitioner's own (a `time_zone` naming another is a 400), else
 * the body's, else Europe/Madrid.
 */
async function zoneOf(
  ctx: Ctx,
  store: SeriesStore,
  body: CreateSeriesInput,
): Promise<{ zone: string; registered: boolean }> {
  const asked = body.time_zone === undefined ? undefined : canonicalTimeZone(body.time_zone)!
  const registered = await store.practitionerZone(ctx.auth.companyId, body.practitioner)
  if (registered && asked && asked !== registered)
    throw new ValidationFailed([
      {
        path: '/time_zone',
        message: `is not the practitioner's (${registered}): a series of a registered practitioner is planned in their zone`,
      },
    ])
  return { zone: registered ?? asked ?? DEFAULT_TIME_ZONE, registered: registered !== null }
}

/** The plan of a create body in `zone` (400 for what only the zone tells: the offset, the limits). */
function planFor(body: CreateSeriesInput, zone: string): Plan {
  const start = parseStart(body.start)
  const rule = parseRule(body.rrule)
  if ('error' in start || 'errors' in rule) throw new Error('planFor: the route checks start and rrule first')
  const offset = zoneOffsetError(start, zone)
  if (offset) throw new ValidationFailed([offset])
  const exdates = [...new Set(body.exdates ?? [])].sort()
  return planSeries({
    start: start.wall,
    rule: rule.rule,
    exdates,
    zone,
    durationMinutes: body.duration_minutes,
  })
}

const fieldsOf = (
  body: CreateSeriesInput,
  zone: string,
  seriesId: string,
  o: PlannedOccurrence,
): AppointmentFields =>
  newAppointmentFields(
    {
      patient_id: body.patient_id.toLowerCase(),
      codalmacen: body.codalmacen,
      practitioner: body.practitioner,
      starts_at: o.starts_at,
      ends_at: o.ends_at,
      time_zone: zone,
    },
    {
      reason: body.reason ?? null,
      notes: body.notes ?? null,
      series_id: seriesId,
      occurrence: o.occurrence,
      recurrence_id: o.starts_at,
    },
  )

/**
 * The common case at once: every occurrence within a registered practitioner's hours, then one
 * insert of them all in a savepoint. Null when any is refused (the caller then claims them one by
 * one to find each conflict).
 */
async function bookAtOnce(
  tx: SeriesTx,
  rows: Array<{ id: string; fields: AppointmentFields }>,
  registered: boolean,
) {
  if (registered) for (const r of rows) if ((await tx.workingCheck(spanOf(r.fields))) !== 'ok') return null
  try {
    return await tx.savepoint(() => tx.insertMany(rows))
  } catch (err) {
    if (err instanceof SlotConflict) return null
    throw err
  }
}

/** Every occurrence booked: at once, else each claimed in its own savepoint (what was booked and what was refused). */
async function bookAll(
  tx: SeriesTx,
  body: CreateSeriesInput,
  zone: string,
  id: string,
  plan: Plan,
  registered: boolean,
) {
  const rows = plan.occurrences.map((o) => ({ id: uuidv7(), fields: fieldsOf(body, zone, id, o) }))
  const atOnce = await bookAtOnce(tx, rows, registered)
  if (atOnce) return { booked: atOnce, found: [] as FoundConflict[] }
  const booked: Appointment[] = []
  const found: FoundConflict[] = []
  // Whether the practitioner has a record is asked with the first occurrence's hours.
  let hours = true
  for (const o of plan.occurrences) {
    const fields = fieldsOf(body, zone, id, o)
    const span = spanOf(fields)
    const claim: Claim<Appointment> = await claimOccurrence(tx, span, () => tx.insert(uuidv7(), fields), {
      hours,
    })
    hours = claim.registered
    if ('made' in claim) booked.push(claim.made)
    else
      found.push({
        occurrence: o.occurrence,
        span,
        patientId: fields.patient_id,
        reason: claim.refused,
        registered: claim.registered,
      })
  }
  return { booked, found }
}

/**
 * Books a series (DESIGN.md section 20): each occurrence an appointment through the same insert
 * as a single booking (the calendar's exclusion constraints, a registered practitioner's hours),
 * with its appointment.created, and appointment.series.created, in one transaction. All or nothing
 * unless allow_partial. Idempotency-Key as POST /appointments: a retry replays without asking the
 * patients service again.
 */
export async function createSeries(
  ctx: Ctx,
  deps: Deps,
  input: CreateSeries,
): Promise<StoredResponse<Series>> {
  const { body } = input
  assertCenter(ctx.auth, body.codalmacen)
  const idempotency = idempotencyOf(ctx, input)
  const companyId = ctx.auth.companyId
  const stored = await deps.store.storedResponse<Series>(companyId, idempotency)
  if (stored) {
    await findVisible(ctx, deps.store, stored.body.id, { notFound: SERIES_NOT_FOUND })
    return stored
  }
  const { zone, registered } = await zoneOf(ctx, deps.store, body)
  const plan = planFor(body, zone)
  if (!(await deps.patients.find(ctx, body.patient_id.toLowerCase()))) throw new UnknownPatient()
  try {
    const result = await deps.store.idempotent(companyId, idempotency, async (tx) => {
      const id = uuidv7()
      const { booked, found } = await bookAll(tx, body, zone, id, plan, registered)
      if (found.length && (!body.allow_partial || !booked.length)) throw new UnclaimedOccurrences(found)
      const series = await tx.insertSeries(id, {
        patient_id: body.patient_id.toLowerCase(),
        practitioner: body.practitioner,
        codalmacen: body.codalmacen,
        time_zone: zone,
        start: wallText(plan.occurrences[0]!.wall),
        duration_minutes: body.duration_minutes,
        rrule: plan.rrule,
        exdates: [...new Set(body.exdates ?? [])].sort(),
        reason: body.reason ?? null,
        notes: body.notes ?? null,
        status: 'active',
        previous_series_id: null,
        next_series_id: null,
        skipped: await skippedOf(ctx, tx, found),
      })
      const events: CloudEvent[] = booked.map((a) => appointmentCreated(ctx, a))
      await tx.publish([...events, seriesCreated(ctx, series, booked.length)])
      return { body: present(series, booked, { visible: null, now: deps.clock().getTime() }) }
    })
    ctx.log.info(
      {
        series_id: result.body.id,
        occurrences: result.body.occurrences.length,
        skipped: result.body.skipped.length,
      },
      'series booked',
    )
    return result
  } catch (err) {
    if (!(err instanceof UnclaimedOccurrences)) throw err
    const planned = plan.occurrences.map((o) => spanOf(fieldsOf(body, zone, '', o)))
    const conflicts = await explainConflicts(ctx, deps.store, err.found, planned)
    ctx.log.info({ conflicts: conflicts.length, occurrences: plan.occurrences.length }, 'series refused')
    throw new SeriesConflict(conflicts, { total: plan.occurrences.length, changing: false })
  }
}
