import type { Migration } from '@clinic/platform'

/**
 * FHIR searches (DESIGN.md section 19) page by last update: an exam's (Encounter, and its findings'
 * Observations and Conditions), a prescription's issue; the center-limited ones by center too; a
 * patient's prescriptions by patient.
 */
export const fhirSearch: Migration = {
  name: '0004_fhir_search',
  async up(knex) {
    await knex.raw(`
      CREATE INDEX exams_by_updated ON exams (idempresa, updated_at, id);
      CREATE INDEX exams_center_by_updated ON exams (idempresa, codalmacen, updated_at, id);
      CREATE INDEX prescriptions_by_issued ON prescriptions (idempresa, issued_at, id);
      CREATE INDEX prescriptions_by_patient ON prescriptions (idempresa, patient_id, issued_at, id);
    `)
  },
}
