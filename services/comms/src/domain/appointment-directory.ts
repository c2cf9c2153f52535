import type { Ctx } from '@clinic/platform/core'

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
