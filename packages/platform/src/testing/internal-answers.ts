import type { PatientContact } from '../contracts/patients'
import type { AppointmentSummary, ExamSummary } from '../internal-api/services'

/**
 * What a test's stand-in for another service answers on its internal lookups: a whole record as
 * the endpoint's declaration has it (a caller refuses less as off-schema: 503), with `over`.
 */
export const internalAnswers = {
  patient: (o: Pick<PatientContact, 'id'> & Partial<PatientContact>): PatientContact => ({
    codalmacen: null,
    first_name: 'Testa',
    last_name: 'Ficticia',
    email: null,
    phone: null,
    preferred_channel: null,
    language: 'es',
    requires_legal_guardian: false,
    guardian: null,
    version: 1,
    ...o,
  }),
  appointment: (
    o: Pick<AppointmentSummary, 'id' | 'patient_id'> & Partial<AppointmentSummary>,
  ): AppointmentSummary => ({
    codalmacen: 'ALM1',
    practitioner: 'dra-ficticia',
    starts_at: '2026-11-23T08:30:00.000Z',
    ends_at: '2026-11-23T09:00:00.000Z',
    time_zone: 'Europe/Madrid',
    status: 'scheduled',
    version: 1,
    ...o,
  }),
  exam: (o: Pick<ExamSummary, 'id' | 'patient_id'> & Partial<ExamSummary>): ExamSummary => ({
    codalmacen: 'ALM1',
    status: 'signed',
    ...o,
  }),
}
