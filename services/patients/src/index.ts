export { buildApp, type Deps } from './app'
export { configSpec, loadPatientsConfig } from './config'
export { APP_ROLE, SCHEMA, migrations } from './db/migrations'
