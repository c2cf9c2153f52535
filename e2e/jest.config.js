module.exports = require('../jest.preset')(__dirname, {
  testMatch: ['<rootDir>/test/**/*.e2e.test.ts'],
  globalSetup: '<rootDir>/src/global-setup.ts',
  globalTeardown: '<rootDir>/src/global-teardown.ts',
  setupFilesAfterEnv: ['<rootDir>/src/slow-tests.ts'],
})
