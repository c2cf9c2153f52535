// `npm test` runs every project; `npx jest --selectProjects services/patients` runs one.
// The global setup makes one database and one RabbitMQ vhost for the whole run and drops them after.
const { swc } = require('./jest.preset')
// One project per service of packages/platform/services.json (the one list of services).
const list = require('./packages/platform/services.json')

module.exports = {
  projects: [
    '<rootDir>/packages/platform',
    '<rootDir>/packages/client',
    ...[list.gateway, ...list.services].map((s) => `<rootDir>/services/${s.name}`),
    '<rootDir>/e2e',
    '<rootDir>/e2e/faults',
    '<rootDir>/scripts',
    '<rootDir>/deploy',
  ],
  globalSetup: '<rootDir>/test-setup/global-setup.ts',
  globalTeardown: '<rootDir>/test-setup/global-teardown.ts',
  transform: { '^.+\\.ts$': swc },
  // Global in Jest (projects cannot set it): generous, because 2 cores run the stack and the tests.
  testTimeout: 60_000,
}
