import type { PatientContact } from '../src/domain/patient-directory'

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
