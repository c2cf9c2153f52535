import { makeEvent, type CloudEvent, type Ctx } from '@clinic/platform/core'
import type { PatientContact } from '@clinic/platform/core'
import type { Patient } from '../schemas/patient'

export const SOURCE = 'clinic/patients'

/**
 * What other services may know of a patient: contact details and the guardian (comms), the center
 * (audit, appointments). Never notes, national id, birth date or address.
 */
/** A patient as its events need it (a new one is known before its row: no timestamps). */
export type PatientOfEvent = Omit<Patient, 'created_at' | 'updated_at'>

export function contactOf(p: PatientOfEvent): PatientContact {
  return {
    id: p.id,
    codalmacen: p.codalmacen,
    first_name: p.first_name,
    last_name: p.last_name,
    email: p.email,
    phone: p.phone,
    preferred_channel: p.preferred_channel,
    language: p.language,
    requires_legal_guardian: p.requires_legal_guardian,
    guardian: p.guardian && {
      name: p.guardian.name,
      relationship: p.guardian.relationship,
      email: p.guardian.email,
      phone: p.guardian.phone,
    },
    version: p.version,
  }
}

export function patientCreated(ctx: Ctx, p: PatientOfEvent): CloudEvent<'patient.created'> {
  return makeEvent({
    type: 'patient.created',
    source: SOURCE,
    subject: p.id,
    companyId: ctx.auth.companyId,
    codalmacen: p.codalmacen,
    ctx,
    data: contactOf(p),
  })
}

/** `changes` names the changed fields, never their values. */
export function patientUpdated(ctx: Ctx, p: Patient, changes: string[]): CloudEvent<'patient.updated'> {
  return makeEvent({
    type: 'patient.updated',
    source: SOURCE,
    subject: p.id,
    companyId: ctx.auth.companyId,
    codalmacen: p.codalmacen,
    ctx,
    data: { ...contactOf(p), changes },
  })
}
