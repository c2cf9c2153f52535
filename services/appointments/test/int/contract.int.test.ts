import { describeServiceContract } from '../../../../test-setup/service-contract'
import type { ServiceDeps } from '@clinic/platform'
import { testServices } from '@clinic/platform/testing'
import { buildApp } from '../../src/app'
import { SCHEMA, migrations } from '../../src/db/migrations'

describeServiceContract({
  service: 'appointments',
  schema: SCHEMA,
  migrations,
  // The contract needs no patient lookups; a client of a port nothing listens on is enough.
  buildApp: (deps: ServiceDeps) =>
    buildApp({
      ...deps,
      services: testServices('appointments', 'http://127.0.0.1:9', 100),
    }),
  protectedPath: '/appointments',
})
