import { locationIdOf } from '@clinic/platform/core'
import type {
  Appointment as FhirAppointment,
  AppointmentParticipant,
  Practitioner as FhirPractitioner,
  Schedule as FhirSchedule,
  Slot as FhirSlot,
} from '@medplum/fhirtypes'
import type { AppointmentStatus } from '../schemas/appointment'
import type { Practitioner } from '../schemas/practitioner'
import type { AppointmentRow, ScheduleRow, SlotRow } from './fhir-store'

/**
 * Our practitioners, schedules, slots and appointments as FHIR R4 resources (DESIGN.md section 19;
 * README "FHIR"; the use cases: fhir-resources.ts).
 *
 * Ids: a Practitioner is its slug, an Appointment its uuid. A Schedule is one practitioner at one
 * center of their working hours: `<practitioner>.<codalmacen>` (a center's `_` written `.`, as
 * FHIR ids have no `_`); a slug longer than 32 characters is written as its first 20, `X` and 11
 * hex digits of its md5 (slugs are lower case, so `X` marks it), which keeps every Schedule id
 * within 43 characters and every Slot id within FHIR's 64. A Slot is `<schedule>.<start>`, the
 * start in UTC as `YYYYMMDDTHHMM[SS[mmm]]Z` (seconds and milliseconds only when not zero): the
 * same time of the same schedule is the same Slot whether free or busy. The store computes the
 * ids (SQL); fhir-resources.ts only reads a Slot id's start back (parseSlotId).
 */

export const APPOINTMENT_STATUS_SYSTEM = 'http://hl7.org/fhir/appointmentstatus'
export const SLOT_STATUS_SYSTEM = 'http://hl7.org/fhir/slotstatus'

/**
 * Our status -> FHIR R4 AppointmentStatus. Scheduled and confirmed are both `booked` (the time is
 * held and the appointment goes ahead); the patient's own participation says which (needs-action
 * until they confirm, then accepted).
 */
export const FHIR_APPOINTMENT_STATUS: Record<AppointmentStatus, FhirAppointment['status']> = {
  scheduled: 'booked',
  confirmed: 'booked',
  checked_in: 'checked-in',
  completed: 'fulfilled',
  cancelled: 'cancelled',
  no_show: 'noshow',
}

const meta = (r: { version: number; updated_at: string }) => ({
  versionId: String(r.version),
  lastUpdated: r.updated_at,
})

export function toFhirPractitioner(p: Practitioner): FhirPractitioner {
  return {
    resourceType: 'Practitioner',
    id: p.id,
    meta: meta(p),
    active: p.active,
    name: [{ text: p.name }],
  }
}

const WEEKDAYS = ['Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat', 'Sun']

/** A schedule: its practitioner and center as actors, the working hours there as its comment. */
export function toFhirSchedule(s: ScheduleRow): FhirSchedule {
  const p = s.practitioner
  const hours = p.working_hours
    .filter((h) => h.codalmacen === s.codalmacen)
    .sort((a, b) => a.weekday - b.weekday || a.start.localeCompare(b.start))
    .map((h) => `${WEEKDAYS[h.weekday - 1]} ${h.start}-${h.end}`)
  return {
    resourceType: 'Schedule',
    id: s.id,
    meta: meta(p),
    active: p.active,
    actor: [
      { reference: `Practitioner/${p.id}`, display: p.name },
      { reference: `Location/${locationIdOf(s.codalmacen)}` },
    ],
    comment: `Working hours (${p.time_zone}, slots of ${p.slot_minutes} min): ${hours.join(', ')}`,
  }
}

export function toFhirSlot(s: SlotRow): FhirSlot {
  return {
    resourceType: 'Slot',
    id: s.id,
    meta: { lastUpdated: s.updated_at },
    schedule: { reference: `Schedule/${s.schedule_id}` },
    status: s.status,
    start: s.starts_at,
    end: s.ends_at,
  }
}

/**
 * An appointment: patient, practitioner (a reference when registered, else its name as display)
 * and center as participants; reason, notes, the cancellation reason while cancelled.
 */
export function toFhirAppointment(a: AppointmentRow): FhirAppointment {
  const practitioner: AppointmentParticipant['actor'] =
    a.practitioner_name === null
      ? { display: a.practitioner }
      : { reference: `Practitioner/${a.practitioner}`, display: a.practitioner_name }
  return {
    resourceType: 'Appointment',
    id: a.id,
    meta: meta(a),
    status: FHIR_APPOINTMENT_STATUS[a.status],
    ...(a.status === 'cancelled' && a.cancellation_reason
      ? { cancelationReason: { text: a.cancellation_reason } }
      : {}),
    ...(a.reason ? { reasonCode: [{ text: a.reason }] } : {}),
    start: a.starts_at,
    end: a.ends_at,
    created: a.created_at,
    ...(a.notes ? { comment: a.notes } : {}),
    participant: [
      {
        actor: { reference: `Patient/${a.patient_id}` },
        required: 'required',
        status: a.status === 'scheduled' ? 'needs-action' : 'accepted',
      },
      { actor: practitioner, required: 'required', status: 'accepted' },
      {
        actor: { reference: `Location/${locationIdOf(a.codalmacen)}` },
        required: 'required',
        status: 'accepted',
      },
    ],
  }
}
