import type { Ctx, OfferAction, PatientContact, WaitlistOffer } from '@clinic/platform/core'

/**
 * The other services as the comms domain sees them (app.ts implements each over the platform's
 * typed client): a record of the caller's company, or null. A service that cannot answer throws
 * UpstreamUnavailable (503).
 *
 * What comms needs of a patient to address a message: the event registry's PatientContact.
 */
export type { PatientContact }

export interface PatientDirectory {
  /** The patient of the caller's company, or null when there is none (other companies' too). */
  find(ctx: Ctx, patientId: string): Promise<PatientContact | null>
}

/** What a reminder needs of an appointment (the appointments service's internal lookup). */
export interface AppointmentInfo {
  id: string
  patient_id: string
  codalmacen: string
  practitioner: string
  starts_at: string
  ends_at: string
  time_zone: string
  status: string
  /** Increments on every change: reminders apply an appointment's state only forward. */
  version: number
}

export interface AppointmentDirectory {
  /** The appointment of the caller's company, or null when there is none. */
  find(ctx: Ctx, appointmentId: string): Promise<AppointmentInfo | null>
}

/**
 * A waitlist offer as the appointments service tells it (internal-api/appointments.ts): the slot
 * held for an entry and where the offer stands (open, accepted, declined, taken, expired,
 * withdrawn).
 */
export type OfferInfo = WaitlistOffer

export interface OfferDirectory {
  /** The offer of the caller's company, or null when there is none. */
  find(ctx: Ctx, offerId: string): Promise<OfferInfo | null>
  /**
   * The patient's answer: the offer as it then stands (an offer no longer open is answered
   * unchanged), or null when there is none.
   */
  answer(ctx: Ctx, offerId: string, action: OfferAction): Promise<OfferInfo | null>
}
