import { describeServiceContract } from '../../../../test-setup/service-contract'
import type { ServiceDeps } from '@clinic/platform'
import { testSigner } from '@clinic/platform/testing'
import { buildApp } from '../../src/app'
import { PatientsClient } from '../../src/clients/patients-client'
import { SCHEMA, migrations } from '../../src/db/migrations'

describeServiceContract({
  service: 'appointments',
  schema: SCHEMA,
  migrations,
  // The contract needs no patient lookups; a client of a port nothing listens on is enough.
  buildApp: (deps: ServiceDeps) =>
    buildApp({
      ...deps,
      patients: new PatientsClient({
        baseUrl: 'http://127.0.0.1:9',
        signer: testSigner('appointments'),
        timeoutMs: 100,
      }),
    }),
  protectedPath: '/appointments',
})
