import { describeServiceContract } from '../../../../test-setup/service-contract'
import { testServices } from '@clinic/platform/testing'
import { buildApp } from '../../src/app'
import { messagingLimits } from '../../src/config'
import { SCHEMA, migrations } from '../../src/db/migrations'
import { testConfig } from '../helpers'

// Nothing listens there: the contract checks never get as far as a patient lookup.
const nowhere = testServices('comms', 'http://127.0.0.1:9', 200)

describeServiceContract({
  service: 'comms',
  schema: SCHEMA,
  migrations,
  buildApp: (deps) =>
    buildApp({
      ...deps,
      services: nowhere,
      limits: messagingLimits(testConfig()),
    }),
  protectedPath: '/comms/send',
})
