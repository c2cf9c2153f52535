const { swc } = require('../../jest.preset')

// @fastify/swagger-ui -> @fastify/static requires content-disposition@3, which is ESM only; like
// cookie@2 in the preset, it goes through SWC so the gateway app loads under Jest on Node < 24.9.
module.exports = require('../../jest.preset')(__dirname, {
  transform: { '^.+\\.ts$': swc, '/(cookie@2|content-disposition@3)[^/]*/.+\\.js$': swc },
  transformIgnorePatterns: ['^(?!.*/\\.pnpm/(cookie@2|content-disposition@3)).*/node_modules/'],
})
