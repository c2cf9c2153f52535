import {
  UnknownPatient,
  ValidationFailed,
  assertCenter,
  centerVisible,
  uuidv7,
  findVisible,
  type Ctx,
  type IdempotencyKey,
  type StoredResponse,
  idempotencyOf,
} from '@clinic/platform/core'
import { appointmentCreated } from '../events/appointment-events'
import type { Appointment, AppointmentFields, CreateAppointmentInput } from '../schemas/appointment'
import type { AppointmentStore, AppointmentTx, Span } from './appointment-store'
import { checkWorking, explainingConflicts } from './calendar-rules'
import type { PatientDirectory } from './directories'
import { fieldsFromCreate } from './rules'

export interface BookAppointment {
  /** Checked against the schema and appointmentFieldErrors by the route. */
  body: CreateAppointmentInput
  /** `?codalmacen=`: the center when the body names none. */
  queryCenter: string | undefined
  idempotencyKey: string | undefined
  /** Hash of method, path and body: the same key with another body is a conflict. */
  requestHash: string
}

/**
 * Books a new appointment, always `scheduled`. The patient must exist in the caller's company
 * (asked of the patients service before anything is written); the database refuses an overlap
 * with the practitioner's or the patient's active appointments (409 slot_conflict). A retry with
 * a used Idempotency-Key replays the first answer without asking the patients service again (it
 * may be down by then): only a new booking needs the patient.
 */
export async function bookAppointment(
  ctx: Ctx,
  deps: { store: AppointmentStore; patients: PatientDirectory },
  input: BookAppointment,
): Promise<StoredResponse<Appointment>> {
  const center = input.body.codalmacen ?? input.queryCenter
  if (center === undefined)
    throw new ValidationFailed([
      { path: '/codalmacen', message: 'is required (in the body or ?codalmacen=)' },
    ])
  assertCenter(ctx.auth, center)
  const fields = fieldsFromCreate(input.body, center)
  const idempotency = idempotencyOf(ctx, input)

  const result =
    (await deps.store.storedResponse<Appointment>(ctx.auth.companyId, idempotency)) ??
    (await book(ctx, deps, fields, idempotency, input.body))
  // A replay is a read: the appointment must still be visible to this token's centers now.
  if (result.replayed) await findVisible(ctx, deps.store, result.body.id, { notFound: 'No such appointment' })
  ctx.log.info({ appointment_id: result.body.id, replayed: !!result.replayed }, 'appointment booked')
  return result
}

/** A new key (or none): the patient lookup, then the insert, once per key. */
async function book(
  ctx: Ctx,
  deps: { store: AppointmentStore; patients: PatientDirectory },
  fields: AppointmentFields,
  idempotency: IdempotencyKey,
  body: CreateAppointmentInput,
): Promise<StoredResponse<Appointment>> {
  if (!(await deps.patients.find(ctx, fields.patient_id))) throw new UnknownPatient()
  const span = spanOf(fields)
  let registered = false
  // A concurrent request with the same key may have committed meanwhile: this replays it then.
  const work = () =>
    deps.store.idempotent(ctx.auth.companyId, idempotency, async (tx) => {
      if (body.hold_id) await convertHold(ctx, tx, body.hold_id.toLowerCase(), fields)
      const working = await checkWorking(tx, span, body.outside_hours)
      registered = working.registered
      const appointment = await tx.insert(uuidv7(), fields)
      await tx.publish([appointmentCreated(ctx, appointment, working.outsideHours)])
      return { body: appointment }
    })
  return explainingConflicts(ctx, deps.store, work, () => ({
    span,
    patientId: fields.patient_id,
    registered,
  }))
}

/** The time an appointment claims from its practitioner. */
export const spanOf = (
  f: Pick<AppointmentFields, 'practitioner' | 'codalmacen' | 'starts_at' | 'ends_at'>,
): Span => ({
  practitioner: f.practitioner,
  center: f.codalmacen,
  starts_at: f.starts_at,
  ends_at: f.ends_at,
})

/**
 * Turns the caller's live hold into this booking: the hold's time is released in the transaction
 * that inserts the appointment, so no one else can take it in between. A hold that is not live,
 * not this company's or of a center the token cannot see is as if none was named (the slot
 * decides); a live one for another slot is a 400.
 */
async function convertHold(ctx: Ctx, tx: AppointmentTx, holdId: string, fields: AppointmentFields) {
  await tx.lockCalendars(fields.practitioner, fields.patient_id)
  const hold = await tx.findHold(holdId)
  if (!hold || !centerVisible(ctx.auth.allowedCenters, hold.codalmacen)) return
  const same =
    hold.practitioner === fields.practitioner &&
    hold.codalmacen === fields.codalmacen &&
    hold.starts_at === fields.starts_at &&
    hold.ends_at === fields.ends_at &&
    (hold.patient_id === null || hold.patient_id === fields.patient_id)
  if (!same)
    throw new ValidationFailed([
      { path: '/hold_id', message: 'is a hold of another practitioner, center, time or patient' },
    ])
  await tx.releaseHold(hold.id, null)
}
