import type { Migration } from '@clinic/platform'

/**
 * FHIR `Communication` searches (DESIGN.md section 19) page by last update, then id; a
 * center-limited token's by center too (as patients' 0007_fhir_search).
 */
export const fhirSearch: Migration = {
  name: '0009_fhir_search',
  async up(knex) {
    await knex.raw(`
      CREATE INDEX messages_by_updated ON messages (idempresa, updated_at, id);
      CREATE INDEX messages_center_by_updated ON messages (idempresa, codalmacen, updated_at, id);
    `)
  },
}
