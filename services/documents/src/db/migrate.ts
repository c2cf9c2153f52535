import { runMigrations } from '@clinic/platform'
import { APP_ROLE, SCHEMA, migrations } from './migrations'

runMigrations(SCHEMA, migrations, APP_ROLE)
