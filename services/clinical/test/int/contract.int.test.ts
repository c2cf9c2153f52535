import { describeServiceContract } from '../../../../test-setup/service-contract'
import { testSigner } from '@clinic/platform/testing'
import { buildApp } from '../../src/app'
import { AppointmentsClient } from '../../src/clients/appointments-client'
import { PatientsClient } from '../../src/clients/patients-client'
import { SCHEMA, migrations } from '../../src/db/migrations'

// Nothing listens there: the contract's checks never get as far as a patient or appointment lookup.
const nowhere = { baseUrl: 'http://127.0.0.1:9', signer: testSigner('clinical'), timeoutMs: 100 }

describeServiceContract({
  service: 'clinical',
  schema: SCHEMA,
  migrations,
  buildApp: (deps) =>
    buildApp({
      ...deps,
      patients: new PatientsClient(nowhere),
      appointments: new AppointmentsClient(nowhere),
    }),
  protectedPath: '/clinical/exams',
})
