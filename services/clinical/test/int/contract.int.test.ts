import { describeServiceContract } from '../../../../test-setup/service-contract'
import { testServices } from '@clinic/platform/testing'
import { buildApp } from '../../src/app'
import { SCHEMA, migrations } from '../../src/db/migrations'

describeServiceContract({
  service: 'clinical',
  schema: SCHEMA,
  migrations,
  // Nothing listens there: the contract's checks never get as far as a patient or appointment lookup.
  buildApp: (deps) => buildApp({ ...deps, services: testServices('clinical', 'http://127.0.0.1:9', 100) }),
  protectedPath: '/clinical/exams',
})
