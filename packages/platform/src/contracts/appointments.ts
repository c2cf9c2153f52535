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

/** A recurring series (DESIGN.md section 20): ids, status and how many occurrences it holds. */
const SeriesData = {
  id: Type.String(),
  patient_id: Type.String(),
  practitioner: Type.String(),
  codalmacen: Type.String(),
  status: Type.String({ description: 'active, ended (split or past its last occurrence) or cancelled' }),
  previous_series_id: Type.Union([Type.String(), Type.Null()], { description: 'the series a split ended' }),
  occurrences: Type.Integer({ description: 'appointments of the series, any status' }),
  version: Type.Integer(),
}
/** A waitlist entry: whose, where, its status; an offer's slot while offered. */
const EntryData = {
  id: Type.String(),
  patient_id: Type.String(),
  codalmacen: Type.String(),
  practitioner: Type.Union([Type.String(), Type.Null()], { description: 'null: any practitioner' }),
  status: Type.String(),
  version: Type.Integer(),
}
const OfferData = {
  offer_id: Type.String({ description: 'the offer, also the id of the hold that keeps its slot' }),
  starts_at: Type.String({ description: 'RFC 3339 UTC' }),
  ends_at: Type.String({ description: 'RFC 3339 UTC' }),
  offered_practitioner: Type.String(),
  time_zone: Type.String(),
  expires_at: Type.String({ description: 'RFC 3339 UTC: the hold ends then' }),
}

const appointment = { resource: 'appointment' } as const
const series = { resource: 'appointment_series' } as const
const entry = { resource: 'waitlist_entry' } as const
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
  'appointment.series.created': {
    ...series,
    data: Type.Object({ ...SeriesData, skipped: Type.Integer({ description: 'occurrences not booked' }) }),
    webhook: {
      path: '/appointments/series',
      when: 'a recurring series is booked (each occurrence also as appointment.created)',
    },
  },
  'appointment.series.updated': {
    ...series,
    data: Type.Object({ ...SeriesData, scope: Type.String(), changes: Changes }),
    webhook: {
      path: '/appointments/series',
      when: 'occurrences of a series are changed (this, following or all), or a split ends it',
    },
  },
  'appointment.series.cancelled': {
    ...series,
    data: Type.Object({ ...SeriesData, scope: Type.String(), cancelled: Type.Integer() }),
    webhook: {
      path: '/appointments/series',
      when: 'occurrences of a series are cancelled (this, following or all)',
    },
  },
  'waitlist.entry.created': {
    ...entry,
    data: Type.Object(EntryData),
    webhook: { path: '/appointments/waitlist', when: 'a patient is put on the waitlist' },
  },
  /** What comms needs to send the offer: the slot, whose and until when. */
  'waitlist.entry.offered': {
    ...entry,
    data: Type.Object({
      ...EntryData,
      ...OfferData,
      channel: Type.Union([Type.String(), Type.Null()], {
        description: "the entry's channel, or null: the patient's",
      }),
    }),
    webhook: { path: '/appointments/waitlist', when: 'a freed slot is held and offered to an entry' },
  },
  'waitlist.entry.declined': {
    ...entry,
    data: Type.Object({ ...EntryData, offer_id: Type.String() }),
    webhook: {
      path: '/appointments/waitlist',
      when: 'the patient declines an offer (the entry waits again)',
    },
  },
  'waitlist.entry.booked': {
    ...entry,
    data: Type.Object({ ...EntryData, offer_id: Type.String(), appointment_id: Type.String() }),
    webhook: { path: '/appointments/waitlist', when: 'the patient accepts an offer: the slot is booked' },
  },
  'waitlist.entry.expired': {
    ...entry,
    data: Type.Object({
      ...EntryData,
      offer_id: Type.Union([Type.String(), Type.Null()], {
        description: 'the offer left unanswered, or null: past its latest date',
      }),
    }),
    webhook: {
      path: '/appointments/waitlist',
      when: 'an offer is left unanswered, or the entry passes its latest date',
    },
  },
  'waitlist.entry.cancelled': {
    ...entry,
    data: Type.Object(EntryData),
    webhook: { path: '/appointments/waitlist', when: 'an entry is taken off the waitlist' },
  },
} satisfies ServiceContracts
