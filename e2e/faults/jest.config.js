// The fault scenarios: a stack of their own behind cuttable proxies (see harness.ts), one file, in order.
module.exports = require('../../jest.preset')(__dirname, {
  displayName: 'e2e/faults',
  testMatch: ['<rootDir>/**/*.fault.test.ts'],
})
