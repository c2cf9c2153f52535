import { runMigrations } from '@clinic/platform'
import { SCHEMA, WRITER_ROLE, migrations } from './migrations'

runMigrations(SCHEMA, migrations, WRITER_ROLE)
