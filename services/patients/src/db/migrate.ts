import { runMigrations } from '@clinic/platform'
import { SCHEMA, migrations } from './migrations'

runMigrations(SCHEMA, migrations)
