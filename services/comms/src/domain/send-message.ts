import {
  UnknownAppointment,
  UnknownPatient,
  ValidationFailed,
  findVisible,
  type Ctx,
  type StoredResponse,
  idempotencyOf,
} from '@clinic/platform/core'
import type { SendMessageInput, VersionedMessage } from '../schemas/message'
import type { MessageStore } from './message-store'
import type { PatientDirectory } from './directories'
import { queueMessage, type AdmissionMetrics, type MessagingLimits } from './queue-message'
import { limitErrors, resolveRecipient } from './rules'
import type { AppointmentDirectory } from './directories'
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
 * and channel, and admits it (`queueMessage`: destination, consent, quotas) writing the row with its
 * event in one transaction. Delivery is the worker's. A refusal (422, 429) stores nothing, the
 * Idempotency-Key included: a retry with the same key is a new attempt.
 *
 * An Idempotency-Key already used is looked up first and replayed (or 409 for another body) before
 * the patient is: a retry gets its stored 202 even while the patients service is down or after the
 * patient's contact changed.
 */
export async function sendMessage(
  ctx: Ctx,
  deps: {
    store: MessageStore
    patients: PatientDirectory
    appointments: AppointmentDirectory
    limits: MessagingLimits
    metrics?: AdmissionMetrics
  },
  input: SendMessage,
): Promise<StoredResponse<VersionedMessage>> {
  const b = input.body
  const idempotency = idempotencyOf(ctx, input)
  const stored = await deps.store.storedResponse<VersionedMessage>(ctx.auth.companyId, idempotency)
  if (stored) return visibleReplay(ctx, deps.store, stored)

  const patient = await deps.patients.find(ctx, b.patient_id)
  const allowed = ctx.auth.allowedCenters
  if (!patient || (allowed && (patient.codalmacen === null || !allowed.includes(patient.codalmacen))))
    throw new UnknownPatient()
  const to = resolveRecipient(patient, {
    recipient: b.recipient,
    channel: b.channel,
    overrideGuardian: b.override_guardian,
  })

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
    const { message } = await queueMessage(
      ctx,
      { tx, limits: deps.limits, metrics: deps.metrics },
      {
        ...to,
        patient: { id: b.patient_id, codalmacen: patient.codalmacen, language: patient.language },
        subject,
        body: text!,
        template: b.template ?? null,
        appointment_id: b.appointment_id ?? null,
        // Only when it overrode something (resolveRecipient refused the patient without it).
        override_guardian: to.role === 'patient' && patient.requires_legal_guardian,
      },
    )
    return { body: message }
  })
  if (result.replayed) return visibleReplay(ctx, deps.store, result)
  return result
}
