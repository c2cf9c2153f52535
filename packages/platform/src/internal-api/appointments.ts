import { Type, type Static } from '@sinclair/typebox'
import { IdParams, Uuid } from '../schemas'
import { command, internalEndpoints, lookup } from './define'

/**
 * What another service learns of an appointment: whose, where, when and its status, never its
 * reason or notes. Dates as RFC 3339 text.
 */
export const AppointmentSummary = Type.Object(
  {
    id: Uuid,
    patient_id: Uuid,
    codalmacen: Type.String(),
    practitioner: Type.String(),
    starts_at: Type.String(),
    ends_at: Type.String(),
    time_zone: Type.String(),
    status: Type.String(),
    /** Increments on every change: a reader applies an appointment's state only forward. */
    version: Type.Integer(),
  },
  { title: 'AppointmentSummary' },
)
export type AppointmentSummary = Static<typeof AppointmentSummary>

/** A patient's answer from a link: `confirm` (scheduled -> confirmed) or `cancel` ("cancelled by patient"). */
export const PATIENT_ACTIONS = ['confirm', 'cancel'] as const
export type PatientAction = (typeof PATIENT_ACTIONS)[number]

/**
 * The appointments service's internal endpoints: the caller's company and centers apply exactly as
 * on `GET /appointments/:id` (another company's, a hidden center's or a missing one are all 404).
 */
export default internalEndpoints('appointments', {
  lookUp: lookup({
    path: '/internal/appointments/:id',
    operationId: 'internalGetAppointmentSummary',
    summary: 'Resolve an appointment of the caller (service to service)',
    params: IdParams,
    answer: AppointmentSummary,
  }),
  /** A patient's answer through a link (comms, whose `patient-link` principal is the actor). */
  respond: command({
    path: '/internal/appointments/:id/respond',
    operationId: 'internalRespondToAppointment',
    summary: "Confirm or cancel an appointment on the patient's behalf (service to service)",
    callers: ['comms'],
    params: IdParams,
    body: Type.Object(
      { action: Type.Union(PATIENT_ACTIONS.map((a) => Type.Literal(a))) },
      { additionalProperties: false },
    ),
    ok: 200,
    answer: AppointmentSummary,
    /** 409: its status allows no such answer (cancelled, checked in, completed...). */
    refusals: { 404: 'not_found', 409: 'invalid_transition' },
  }),
})
