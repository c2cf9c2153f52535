import {
  UnknownPatient,
  ValidationFailed,
  assertCenter,
  uuidv7,
  findVisible,
  type Ctx,
  type IdempotencyKey,
  type StoredResponse,
} from '@clinic/platform/core'
import { appointmentCreated } from '../events/appointment-events'
import type { Appointment, AppointmentFields, CreateAppointmentInput } from '../schemas/appointment'
import type { AppointmentStore } from './appointment-store'
import type { PatientDirectory } from './patient-directory'
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
  const idempotency = { tokenId: ctx.auth.tokenId, key: input.idempotencyKey, hash: input.requestHash }

  const result =
    (await deps.store.storedResponse<Appointment>(ctx.auth.companyId, idempotency)) ??
    (await book(ctx, deps, fields, idempotency))
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
): Promise<StoredResponse<Appointment>> {
  if (!(await deps.patients.exists(ctx, fields.patient_id))) throw new UnknownPatient()
  // A concurrent request with the same key may have committed meanwhile: this replays it then.
  return deps.store.idempotent(ctx.auth.companyId, idempotency, async (tx) => {
    const appointment = await tx.insert(uuidv7(), fields)
    await tx.publish([appointmentCreated(ctx, appointment)])
    return { body: appointment }
  })
}
