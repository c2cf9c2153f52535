import type { Ctx } from '@clinic/platform/core'

/** What comms needs of a patient to address a message (the patients service's internal lookup). */
export interface PatientContact {
  id: string
  codalmacen: string | null
  first_name: string
  last_name: string
  email: string | null
  phone: string | null
  preferred_channel: string | null
  language: string
  requires_legal_guardian: boolean
  guardian: { name: string; relationship: string | null; email: string | null; phone: string | null } | null
}

export interface PatientDirectory {
  /** The patient of the caller's company, or null when there is none (other companies' too). */
  contact(ctx: Ctx, patientId: string): Promise<PatientContact | null>
}
