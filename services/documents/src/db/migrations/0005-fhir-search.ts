import type { Migration } from '@clinic/platform'

/**
 * FHIR searches (DESIGN.md section 19) page documents and consents by last update, then id; the
 * center-limited ones by center too (as patients' 0007_fhir_search).
 */
export const fhirSearch = (): Migration => ({
  name: '0005_fhir_search',
  async up(knex) {
    await knex.raw(`
      CREATE INDEX documents_by_updated ON documents (idempresa, updated_at, id);
      CREATE INDEX documents_center_by_updated ON documents (idempresa, codalmacen, updated_at, id);
      CREATE INDEX consents_by_updated ON consents (idempresa, updated_at, id);
      CREATE INDEX consents_center_by_updated ON consents (idempresa, codalmacen, updated_at, id);
    `)
  },
})
