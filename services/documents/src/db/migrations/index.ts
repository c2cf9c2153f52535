import type { Migration } from '@clinic/platform'
import { base } from './0001-base'
import { documentsTables } from './0002-documents'
import { consentsTables } from './0003-consents'
import { consentClinic } from './0004-consent-clinic'
import { fhirSearch } from './0005-fhir-search'

export const SCHEMA = 'documents'
/** The role the service runs as (SET ROLE after connect); row-level security applies to it. */
export const APP_ROLE = 'clinic_documents_app'

/** Applied in order, one file each; never edited after they land. */
export const migrations: Migration[] = [
  base(SCHEMA, APP_ROLE),
  documentsTables(APP_ROLE),
  consentsTables(SCHEMA, APP_ROLE),
  consentClinic(),
  fhirSearch(),
]
