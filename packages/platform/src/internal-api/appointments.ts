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
 * A waitlist offer as the patient's page shows it (DESIGN.md section 20): the slot held for the
 * entry, and where the offer stands. `state`: open (it may be answered until `expires_at`),
 * accepted (booked: `appointment_id`), declined, taken (staff took the slot meanwhile), expired,
 * withdrawn (the entry was cancelled).
 */
export const OFFER_STATES = ['open', 'accepted', 'declined', 'taken', 'expired', 'withdrawn'] as const
export const WaitlistOffer = Type.Object(
  {
    id: Uuid,
    entry_id: Uuid,
    patient_id: Uuid,
    codalmacen: Type.String(),
    practitioner: Type.String(),
    starts_at: Type.String(),
    ends_at: Type.String(),
    time_zone: Type.String(),
    expires_at: Type.String(),
    state: Type.Union(OFFER_STATES.map((s) => Type.Literal(s))),
    appointment_id: Type.Union([Uuid, Type.Null()]),
  },
  { title: 'WaitlistOffer' },
)
export type WaitlistOffer = Static<typeof WaitlistOffer>
export const OFFER_ACTIONS = ['accept', 'decline'] as const
export type OfferAction = (typeof OFFER_ACTIONS)[number]

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
  /** A waitlist offer, for its page (comms' `/p/w/<token>`); an offer the staff took meanwhile reads `taken`. */
  waitlistOffer: lookup({
    path: '/internal/appointments/waitlist-offers/:id',
    operationId: 'internalGetWaitlistOffer',
    summary: 'Read a waitlist offer of the caller (service to service)',
    callers: ['comms'],
    params: IdParams,
    answer: WaitlistOffer,
  }),
  /**
   * The patient's answer to an offer: `accept` books the held slot (state accepted), `decline`
   * releases it to the next entry. An offer no longer open is answered as it stands, unchanged.
   */
  answerOffer: command({
    path: '/internal/appointments/waitlist-offers/:id/answer',
    operationId: 'internalAnswerWaitlistOffer',
    summary: "Accept or decline a waitlist offer on the patient's behalf (service to service)",
    callers: ['comms'],
    params: IdParams,
    body: Type.Object(
      { action: Type.Union(OFFER_ACTIONS.map((a) => Type.Literal(a))) },
      { additionalProperties: false },
    ),
    ok: 200,
    answer: WaitlistOffer,
    refusals: { 404: 'not_found' },
  }),
})
