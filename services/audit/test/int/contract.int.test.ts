import { describeServiceContract } from '../../../../test-setup/service-contract'
import { buildApp } from '../../src/app'
import { SCHEMA, migrations } from '../../src/db/migrations'

describeServiceContract({
  service: 'audit',
  schema: SCHEMA,
  migrations,
  buildApp,
  protectedPath: '/audit/events',
})
