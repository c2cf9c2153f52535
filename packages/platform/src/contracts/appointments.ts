import { Type } from '@sinclair/typebox'
import { Changes, type ServiceContracts } from './define'

/** What reminders and schedules need of an appointment: never its reason, notes or cancellation reason. */
const AppointmentSlot = {
  id: Type.String(),
  patient_id: Type.String(),
  codalmacen: Type.String(),
  practitioner: Type.String(),
  starts_at: Type.String({ description: 'RFC 3339 UTC' }),
  ends_at: Type.String({ description: 'RFC 3339 UTC' }),
  time_zone: Type.String({ description: 'IANA zone for local-time reminders' }),
  status: Type.String(),
  checked_in_at: Type.Union([Type.String(), Type.Null()]),
  version: Type.Integer(),
}
const StatusChange = {
  changes: Changes,
  old_status: Type.Union([Type.String(), Type.Null()], { description: 'when the status changed, else null' }),
  new_status: Type.Union([Type.String(), Type.Null()], { description: 'when the status changed, else null' }),
}
/** Present (true) when a booking or move was made outside a registered practitioner's hours on purpose. */
const OutsideHours = Type.Optional(Type.Literal(true))
const PractitionerIds = {
  id: Type.String(),
  active: Type.Boolean(),
  version: Type.Integer(),
}

const appointment = { resource: 'appointment' } as const
const practitioner = { resource: 'practitioner' } as const

export default {
  'appointment.created': {
    ...appointment,
    data: Type.Object({ ...AppointmentSlot, outside_hours: OutsideHours }),
    webhook: { path: '/appointments', when: 'an appointment is booked (also from a hold)' },
  },
  /** Which fields changed, never their values (the new slot is read from the service). */
  'appointment.updated': {
    ...appointment,
    data: Type.Object({
      id: Type.String(),
      patient_id: Type.String(),
      version: Type.Integer(),
      ...StatusChange,
      outside_hours: OutsideHours,
    }),
    webhook: {
      path: '/appointments',
      when: 'an appointment is moved, confirmed, cancelled, completed, marked no-show or edited',
    },
  },
  'appointment.checked_in': {
    ...appointment,
    data: Type.Object({ ...AppointmentSlot, ...StatusChange }),
    webhook: { path: '/appointments', when: 'a patient checks in' },
  },
  /** A practitioner's record (DESIGN.md section 11): ids and flags; hours are read from the service. */
  'practitioner.created': {
    ...practitioner,
    data: Type.Object(PractitionerIds),
    webhook: { path: '/practitioners', when: 'a practitioner is registered' },
  },
  'practitioner.updated': {
    ...practitioner,
    data: Type.Object({ ...PractitionerIds, changes: Changes }),
    webhook: { path: '/practitioners', when: 'hours, time zone, slot length, name or active change' },
  },
} satisfies ServiceContracts
