import { describeServiceContract } from '../../../../test-setup/service-contract'
import { testSigner } from '@clinic/platform/testing'
import { buildApp } from '../../src/app'
import { AppointmentsClient } from '../../src/clients/appointments-client'
import { PatientsClient } from '../../src/clients/patients-client'
import { messagingLimits } from '../../src/config'
import { SCHEMA, migrations } from '../../src/db/migrations'
import { testConfig } from '../helpers'

// Nothing listens there: the contract checks never get as far as a patient lookup.
const nowhere = {
  baseUrl: 'http://127.0.0.1:9',
  signer: testSigner('comms'),
  timeoutMs: 200,
}

describeServiceContract({
  service: 'comms',
  schema: SCHEMA,
  migrations,
  buildApp: (deps) =>
    buildApp({
      ...deps,
      patients: new PatientsClient(nowhere),
      appointments: new AppointmentsClient(nowhere),
      limits: messagingLimits(testConfig()),
    }),
  protectedPath: '/comms/send',
})
