// Shared Jest project settings: TypeScript through SWC (fast, no type-check; `tsc -b` does that),
// workspace packages resolved to their sources so tests never run stale builds.
const path = require('node:path')

const root = __dirname
/** ESM-only packages the tests load, as their folders under node_modules/.pnpm begin. */
const ESM_ONLY = [
  'cookie@2',
  'file-type@',
  'strtok3@',
  'token-types@',
  'uint8array-extras@',
  '@tokenizer\\+inflate@',
  '@borewit\\+text-codec@',
].join('|')
const swc = [
  '@swc/jest',
  {
    jsc: { target: 'es2022', parser: { syntax: 'typescript' } },
    module: { type: 'commonjs' },
    sourceMaps: 'inline',
  },
]

module.exports = function project(dir, overrides = {}) {
  return {
    displayName: path.relative(root, dir),
    rootDir: dir,
    testEnvironment: 'node',
    // light-my-request (app.inject) requires cookie@2, and documents types uploads with file-type,
    // which are ESM only; Jest on Node < 24.9 cannot require ESM, so those packages (and file-type's
    // own ESM dependencies) go through SWC too.
    transform: { '^.+\\.ts$': swc, [`/(${ESM_ONLY})[^/]*/.+\\.js$`]: swc },
    transformIgnorePatterns: [`^(?!.*/\\.pnpm/(${ESM_ONLY})).*/node_modules/`],
    moduleNameMapper: {
      '^@clinic/platform$': path.join(root, 'packages/platform/src/index.ts'),
      '^@clinic/platform/testing$': path.join(root, 'packages/platform/src/testing/index.ts'),
      '^@clinic/platform/(core|http|db|events)$': path.join(root, 'packages/platform/src/entry/$1.ts'),
      '^@clinic/platform/services.json$': path.join(root, 'packages/platform/services.json'),
      '^@clinic/platform/naming$': path.join(root, 'packages/platform/naming.cjs'),
      '^@clinic/client$': path.join(root, 'packages/client/src/index.ts'),
    },
    testMatch: ['<rootDir>/test/**/*.test.ts'],
    ...overrides,
  }
}
module.exports.swc = swc
