import type { Migration } from '@clinic/platform'
import { base } from './0001-base'
import { clinicalTables } from './0002-clinical'
import { diagnosisSystems } from './0003-diagnosis-systems'
import { fhirSearch } from './0004-fhir-search'

export const SCHEMA = 'clinical'
/** The role the service runs as (SET ROLE after connect); row-level security applies to it. */
export const APP_ROLE = 'clinic_clinical_app'

/** Applied in order, one file each; never edited after they land. */
export const migrations: Migration[] = [
  base(SCHEMA, APP_ROLE),
  clinicalTables(APP_ROLE),
  diagnosisSystems,
  fhirSearch,
]
