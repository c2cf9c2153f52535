// The container suites (DESIGN.md section 18): the images built and the Compose stack run on a
// Docker engine. `npm test` runs this project last, alone (it starts some twenty containers).
module.exports = require('../jest.preset')(__dirname, {
  testMatch: ['<rootDir>/test/**/*.test.ts'],
})
