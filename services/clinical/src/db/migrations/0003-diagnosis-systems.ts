import type { Migration } from '@clinic/platform'

/**
 * Diagnoses say which ICD-10 they are from (DESIGN 14.4: `icd10` WHO ICD-10, `icd10cm`
 * ICD-10-CM, `cie10es` CIE-10-ES, `snomed`). Before, `icd10` was the only ICD system: the API
 * called it "ICD-10 (H40.11)", took any code of the clinical modifications' shape (a category and up
 * to four more characters) and the FHIR output sent every one as WHO ICD-10. What it meant was
 * "some edition of ICD-10", unstated.
 *
 * - An `icd10` code WHO ICD-10 can have (a category `H40`, or a subcategory `H40.1`) keeps `icd10`:
 *   what was entered and what the FHIR output has always said. (The same code in ICD-10-CM or
 *   CIE-10-ES names the same category.)
 * - An `icd10` code WHO ICD-10 cannot have (more than one character after the dot, or a letter
 *   there: `H40.11`, `H40.1X10`) is from a clinical modification. The migration ASSUMES it is
 *   ICD-10-CM, the one the API's own example (H40.11) came from; CIE-10-ES is Spain's edition of
 *   ICD-10-CM and shares its codes, so the code means the same there save for local differences.
 *   The relabel is not silent: `system_as_entered: 'icd10'` stays on the finding, the API shows it,
 *   and the FHIR Condition carries a note saying so. A clinic that entered CIE-10-ES codes can
 *   relabel those rows `cie10es` (they are the ones with `system_as_entered`).
 *
 * The exam's version is not moved: the code as entered, what was signed, is unchanged, and a
 * version without a history row would break "the history lists every version".
 */
export const diagnosisSystems: Migration = {
  name: '0003_diagnosis_systems',
  async up(knex) {
    // Every company's rows: the owner is outside the policies only while they are not forced (a
    // superuser owner is anyway), so they are lifted for this statement and put back. `{0,1}` and
    // not a question mark, which knex would read as a binding.
    await knex.raw(`
      ALTER TABLE findings NO FORCE ROW LEVEL SECURITY;
      UPDATE findings
         SET data = data || '{"system": "icd10cm", "system_as_entered": "icd10"}'::jsonb
       WHERE kind = 'diagnoses'
         AND data->>'system' = 'icd10'
         AND data->>'code' !~ '^[A-Z][0-9]{2}([.][0-9]){0,1}$';
      ALTER TABLE findings FORCE ROW LEVEL SECURITY;
    `)
  },
}
