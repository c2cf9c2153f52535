// Tests of the repository scripts (the `npm start` supervisor).
module.exports = require('../jest.preset')(__dirname)
