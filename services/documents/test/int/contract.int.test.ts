import { describeServiceContract } from '../../../../test-setup/service-contract'
import { testServices } from '@clinic/platform/testing'
import { buildApp } from '../../src/app'
import { SCHEMA, migrations } from '../../src/db/migrations'
import { LINK_SECRET, PUBLIC_BASE_URL } from '../helpers'

describeServiceContract({
  service: 'documents',
  schema: SCHEMA,
  migrations,
  // Nothing listens there: the contract's checks never get as far as a patient, appointment or exam
  // lookup, nor a message through comms.
  buildApp: (deps) =>
    buildApp({
      ...deps,
      services: testServices('documents', 'http://127.0.0.1:9', 200),
      linkSecret: LINK_SECRET,
      publicBaseUrl: PUBLIC_BASE_URL,
    }),
  protectedPath: '/documents',
})
