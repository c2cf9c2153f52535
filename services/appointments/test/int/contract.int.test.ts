import { describeServiceContract } from '../../../../test-setup/service-contract'
import { buildApp } from '../../src/app'
import { SCHEMA, migrations } from '../../src/db/migrations'

describeServiceContract({
  service: 'appointments',
  schema: SCHEMA,
  migrations,
  buildApp,
  protectedPath: '/appointments',
})
