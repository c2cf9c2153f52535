import { describeServiceContract } from '../../../../test-setup/service-contract'
import type { ServiceDeps } from '@clinic/platform'
import { buildApp } from '../../src/app'
import { SCHEMA, migrations } from '../../src/db/migrations'
import { SecretBox } from '../../src/domain/secrets'

describeServiceContract({
  service: 'webhooks',
  schema: SCHEMA,
  migrations,
  // The contract sends no webhook and reads no feed: no resolver is asked, no long poll waits.
  buildApp: (deps: ServiceDeps) =>
    buildApp({
      ...deps,
      box: new SecretBox('test-webhooks-secret-key-0123456789abcdef'),
      policy: {
        allowInsecure: false,
        resolve: async (host) => {
          throw new Error(`the contract resolves no host (${host})`)
        },
      },
      feedChanged: async () => {},
    }),
  protectedPath: '/webhooks/endpoints',
})
