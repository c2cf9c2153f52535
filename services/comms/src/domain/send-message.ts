import {
  UnknownPatient,
  ValidationFailed,
  findVisible,
  uuidv7,
  type Ctx,
  type StoredResponse,
  idempotencyOf,
} from '@clinic/platform/core'
import { messageEvent } from '../events/message-events'
import type { SendMessageInput, VersionedMessage } from '../schemas/message'
import { UnknownAppointment } from './errors'
import type { MessageStore } from './message-store'
import type { PatientDirectory } from './patient-directory'
import { limitErrors, resolveRecipient } from './rules'
import type { AppointmentDirectory } from './appointment-directory'
import { renderReminder } from './templates'

export interface SendMessage {
  body: SendMessageInput
  idempotencyKey: string | undefined
  requestHash: string
}

/**
 * A replay is a read: the message must still exist and be visible to this token's centers now,
 * else 404 as if missing (as the platform's idempotency helper asks of every caller).
 */
async function visibleReplay(
  ctx: Ctx,
  store: MessageStore,
  result: StoredResponse<VersionedMessage>,
): Promise<StoredResponse<VersionedMessage>> {
  await findVisible(ctx, store, result.body.id, { notFound: 'No such message' })
  ctx.log.info({ message_id: result.body.id, replayed: true }, 'message send replayed')
  return result
}

/**
 * Queues a message: resolves the patient (another company's, or one outside a center-limited
 * token's centers, is unknown_patient: indistinguishable from a missing one), picks the recipient
 * and channel, and writes the row with its `comms.message.queued` event in one transaction.
 * Delivery is the worker's.
 *
 * An Idempotency-Key already used is looked up first and replayed (or 409 for another body) before
 * the patient is: a retry gets its stored 202 even while the patients service is down or after the
 * patient's contact changed.
 */
export async function sendMessage(
  ctx: Ctx,
  deps: { store: MessageStore; patients: PatientDirectory; appointments: AppointmentDirectory },
  input: SendMessage,
): Promise<StoredResponse<VersionedMessage>> {
  const b = input.body
  const idempotency = idempotencyOf(ctx, input)
  const stored = await deps.store.storedResponse<VersionedMessage>(ctx.auth.companyId, idempotency)
  if (stored) return visibleReplay(ctx, deps.store, stored)

  const patient = await deps.patients.contact(ctx, b.patient_id)
  const allowed = ctx.auth.allowedCenters
  if (!patient || (allowed && (patient.codalmacen === null || !allowed.includes(patient.codalmacen))))
    throw new UnknownPatient()
  const to = resolveRecipient(patient, { recipient: b.recipient, channel: b.channel })

  let text = b.body
  let subject = to.channel === 'email' ? (b.subject ?? null) : null
  if (b.appointment_id) {
    // Linked to an appointment: it must be this patient's, in the caller's company.
    const appointment = await deps.appointments.find(ctx, b.appointment_id)
    if (!appointment || appointment.patient_id !== b.patient_id) throw new UnknownAppointment()
    if (b.template) {
      const rendered = renderReminder(appointment, patient.language, to.name)
      text = rendered.body
      if (to.channel === 'email') subject = subject ?? rendered.subject
    }
  }
  const errors = limitErrors(to.channel, text!, b.subject)
  if (errors.length) throw new ValidationFailed(errors, 'The body is not valid')

  // Still through the key: a concurrent request with the same key waits on it and replays.
  const result = await deps.store.idempotent(ctx.auth.companyId, idempotency, async (tx) => {
    const message = await tx.insert(uuidv7(), {
      patient_id: b.patient_id,
      appointment_id: b.appointment_id ?? null,
      codalmacen: patient.codalmacen,
      channel: to.channel,
      recipient_role: to.role,
      recipient_name: to.name,
      recipient_address: to.address,
      language: patient.language,
      subject,
      body: text!,
      template: b.template ?? null,
    })
    await tx.publish([messageEvent('comms.message.queued', ctx.auth.companyId, message, { ctx })])
    return { body: message }
  })
  if (result.replayed) return visibleReplay(ctx, deps.store, result)
  ctx.log.info({ message_id: result.body.id, channel: to.channel, role: to.role }, 'message queued')
  return result
}
