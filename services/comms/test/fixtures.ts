import type { PatientContact } from '../src/domain/directories'
import type { ClaimedMessage } from '../src/domain/deliver-message'

let seq = 0
/** Obviously fake contact data (example.test addresses, +34 600 000 xxx numbers). */
export function makeContact(overrides: Partial<PatientContact> = {}): PatientContact {
  seq += 1
  return {
    id: `0190c5a0-0000-7000-8000-${String(100000 + seq).padStart(12, '0')}`,
    codalmacen: 'ALM1',
    first_name: 'Testa',
    last_name: `Ficticia${seq}`,
    email: `patient${seq}@example.test`,
    phone: '+34600000001',
    preferred_channel: null,
    language: 'es',
    requires_legal_guardian: false,
    guardian: null,
    version: 1,
    ...overrides,
  }
}

export const guardianOf = (overrides: Partial<NonNullable<PatientContact['guardian']>> = {}) => ({
  name: 'Tutora Ficticia',
  relationship: 'mother',
  email: 'guardian@example.test',
  phone: '+34600000002',
  ...overrides,
})

/** A message as the delivery worker claims it: queued email, its body, and what `over` changes. */
export const claimedMessage = (over: Partial<ClaimedMessage> = {}): ClaimedMessage => ({
  companyId: 7,
  language: 'es',
  cause: {},
  id: '0190c5a0-0000-7000-8000-0000000d0001',
  patient_id: '0190c5a0-0000-7000-8000-0000000d0002',
  appointment_id: null,
  codalmacen: 'ALM1',
  status: 'queued',
  recipient: { role: 'patient', name: 'Testa Ficticia', address: 'ficticia@example.test' },
  channel: 'email',
  subject: 'Cita',
  template: null,
  override_guardian: false,
  attempts: 1,
  last_error: null,
  provider_id: null,
  created_at: '2026-01-01T00:00:00.000Z',
  sent_at: null,
  body: 'Recordatorio',
  ...over,
})
