import type { Appointment, AppointmentStatus } from '../src/schemas/appointment'

/** A stored appointment in the given status, with obviously fake data (unit tests). */
export const appointmentIn = (status: AppointmentStatus, extra: Partial<Appointment> = {}): Appointment => ({
  id: '0190c5a0-0000-7000-8000-0000000000a1',
  patient_id: '0190c5a0-0000-7000-8000-0000000000b1',
  codalmacen: 'ALM1',
  practitioner: 'dra-ejemplo',
  starts_at: '2026-11-23T08:30:00.000Z',
  ends_at: '2026-11-23T09:00:00.000Z',
  time_zone: 'Europe/Madrid',
  reason: null,
  notes: null,
  status,
  cancellation_reason: status === 'cancelled' ? 'aviso' : null,
  checked_in_at: status === 'checked_in' || status === 'completed' ? '2026-11-23T08:25:00.000Z' : null,
  series_id: null,
  occurrence: null,
  recurrence_id: null,
  waitlist_entry_id: null,
  created_at: '2026-11-20T10:00:00.000Z',
  updated_at: '2026-11-20T10:00:00.000Z',
  version: 1,
  ...extra,
})
