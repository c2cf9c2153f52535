import type { Migration } from '@clinic/platform'
import { base } from './0001-base'
import { documentsTables } from './0002-documents'

export const SCHEMA = 'documents'
/** The role the service runs as (SET ROLE after connect); row-level security applies to it. */
export const APP_ROLE = 'clinic_documents_app'

/** Applied in order, one file each; never edited after they land. */
export const migrations: Migration[] = [base(SCHEMA, APP_ROLE), documentsTables(APP_ROLE)]
