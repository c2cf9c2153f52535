// `npm test` runs every project; `npx jest --selectProjects services/patients` runs one.
// The global setup makes one database and one RabbitMQ vhost for the whole run and drops them after.
const { swc } = require('./jest.preset')

module.exports = {
  projects: [
    '<rootDir>/packages/platform',
    '<rootDir>/services/gateway',
    '<rootDir>/services/patients',
    '<rootDir>/services/appointments',
    '<rootDir>/services/comms',
    '<rootDir>/services/audit',
    '<rootDir>/e2e',
  ],
  globalSetup: '<rootDir>/test-setup/global-setup.ts',
  globalTeardown: '<rootDir>/test-setup/global-teardown.ts',
  transform: { '^.+\\.ts$': swc },
  // Global in Jest (projects cannot set it): generous, because 2 cores run the stack and the tests.
  testTimeout: 60_000,
}
