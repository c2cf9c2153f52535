// `npm run mutation -- <service> [--int] [--mutate <glob[:lines]>]... [--ignore-static] [--concurrency <n>]`: mutation
// testing (Stryker, its Jest runner) of a service's domain, services/<service>/src/domain. Not part
// of `npm test`: it runs the service's tests once per mutant, which takes minutes.
//
// - The tests are the service's unit tests (test/unit); `--int` adds its int tests (real PostgreSQL
//   and RabbitMQ: the Jest global setup makes a database and vhost for each run of a mutant, so a run
//   takes many times longer).
// - Each mutant runs only the tests that reached its code in the first run (coverage per test) and
//   only in the files that import the mutated file (Jest's findRelatedTests).
// - Stryker instruments the TypeScript sources in a copy of the workspace (var/stryker-tmp) and marks
//   them `// @ts-nocheck`; the Jest preset's SWC transform strips the types as usual (SWC does not
//   type-check, so no checker runs: a mutant that would not compile counts as any other).
// - Reports: var/mutation/<service>/index.html (per mutant, per test), mutation.json, and
//   scores.md (the score per file, as the README records it); with --int in var/mutation/<service>-int.
//   var/ is kept out of git.
import { mkdirSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import path from 'node:path'
import { parseArgs } from 'node:util'
import { ensureTestPackages } from './ensure-chromium.mjs'
import { checkDependencies, loadDotEnv, root, services } from './lib.mjs'

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    int: { type: 'boolean', default: false },
    'ignore-static': { type: 'boolean', default: false },
    mutate: { type: 'string', multiple: true },
    concurrency: { type: 'string', default: '2' },
  },
})
const [service] = positionals
if (!service || !services.includes(service) || positionals.length > 1) {
  console.error(`usage: npm run mutation -- <service> [--int] [--mutate <glob>] [--ignore-static] [--concurrency <n>]
  <service>: one of ${services.join(', ')}`)
  process.exit(2)
}

loadDotEnv()
// The tests' Debian packages (documents' consent PDF tests read the PDF back with poppler).
ensureTestPackages()
if (values.int) await checkDependencies()

const dir = `services/${service}`
const out = `var/mutation/${service}${values.int ? '-int' : ''}`
mkdirSync(path.join(root, out), { recursive: true })
process.chdir(root)

const { Stryker } = await import('@stryker-mutator/core')
/**
 * Stryker wraps the test environment in its own and loads the wrapped one by name from the project;
 * pnpm keeps `jest-environment-node` out of the root node_modules, so it is named by its path (the
 * one Jest itself would load: jest -> @jest/core -> jest-config -> jest-environment-node).
 */
const nodeEnvironment = ['jest', '@jest/core', 'jest-config', 'jest-environment-node'].reduce(
  (from, name) => createRequire(from).resolve(name),
  path.join(root, 'package.json'),
)
const testMatch = [
  '<rootDir>/test/unit/**/*.test.ts',
  ...(values.int ? ['<rootDir>/test/int/**/*.int.test.ts'] : []),
]
const stryker = new Stryker({
  packageManager: 'pnpm',
  testRunner: 'jest',
  plugins: ['@stryker-mutator/jest-runner'],
  mutate: values.mutate ?? [`${dir}/src/domain/**/*.ts`],
  coverageAnalysis: 'perTest',
  // A static mutant (a module-level constant: a code table, a regex) runs every related test file
  // whole; --ignore-static leaves them out, for a quick look while writing tests, never for a score.
  ignoreStatic: values['ignore-static'],
  concurrency: Number(values.concurrency),
  // A mutant is a timeout (counted as killed) only well past its tests' time in the first run: on a
  // loaded machine (other jobs on the 2 cores) a static mutant's run of whole test files can take
  // several times as long, and Stryker's default factor (1.5) then counts slow runs as kills.
  timeoutMS: values.int ? 30_000 : 10_000,
  timeoutFactor: 3,
  jest: {
    projectType: 'custom',
    configFile: `${dir}/jest.config.js`,
    enableFindRelatedTests: true,
    config: {
      testMatch,
      testEnvironment: nodeEnvironment,
      // The root config's, which a service's project config leaves to it (jest.config.js).
      ...(values.int
        ? {
            globalSetup: '<rootDir>/../../test-setup/global-setup.ts',
            globalTeardown: '<rootDir>/../../test-setup/global-teardown.ts',
          }
        : {}),
      testTimeout: 60_000,
    },
  },
  // The sandbox is a copy of what the service's tests load: the platform, the service, the setup.
  tempDirName: 'var/stryker-tmp',
  cleanTempDir: true,
  ignorePatterns: [
    '/var',
    '/services/*',
    `!/${dir}`,
    '/e2e',
    '/bench',
    '/deploy',
    '/docs',
    'dist',
    'coverage',
  ],
  reporters: ['clear-text', 'progress', 'html', 'json'],
  htmlReporter: { fileName: `${out}/index.html` },
  jsonReporter: { fileName: `${out}/mutation.json` },
  clearTextReporter: { allowColor: false, logTests: false, reportMutants: true, reportScoreTable: true },
  thresholds: { high: 85, low: 75, break: null },
})

const started = Date.now()
const results = await stryker.runMutationTest()
const minutes = ((Date.now() - started) / 60_000).toFixed(1)

/** Stryker's mutation score: killed (and timed out) of those that ran or had no test. */
const DETECTED = new Set(['Killed', 'Timeout'])
const COUNTED = new Set(['Killed', 'Timeout', 'Survived', 'NoCoverage'])
const byFile = new Map()
for (const r of results) {
  if (!COUNTED.has(r.status)) continue
  const file = path.relative(`${dir}/src`, path.relative(root, path.resolve(r.fileName)))
  const f = byFile.get(file) ?? { detected: 0, total: 0, survived: 0, noCoverage: 0 }
  f.total++
  if (DETECTED.has(r.status)) f.detected++
  if (r.status === 'Survived') f.survived++
  if (r.status === 'NoCoverage') f.noCoverage++
  byFile.set(file, f)
}
const pct = (f) => (f.total ? ((100 * f.detected) / f.total).toFixed(2) : 'n/a')
const all = [...byFile.values()].reduce(
  (a, f) => ({
    detected: a.detected + f.detected,
    total: a.total + f.total,
    survived: a.survived + f.survived,
    noCoverage: a.noCoverage + f.noCoverage,
  }),
  { detected: 0, total: 0, survived: 0, noCoverage: 0 },
)
const rows = [...byFile.entries()].sort(([a], [b]) => a.localeCompare(b))
const table = [
  `Mutation score of ${dir}/src/domain (${values.int ? 'unit and int' : 'unit'} tests; ${minutes} min)`,
  '',
  '| file | score % | killed | survived | no coverage | mutants |',
  '| --- | ---: | ---: | ---: | ---: | ---: |',
  ...rows.map(
    ([file, f]) => `| ${file} | ${pct(f)} | ${f.detected} | ${f.survived} | ${f.noCoverage} | ${f.total} |`,
  ),
  `| **all** | **${pct(all)}** | ${all.detected} | ${all.survived} | ${all.noCoverage} | ${all.total} |`,
].join('\n')
writeFileSync(path.join(root, out, 'scores.md'), `${table}\n`)
console.log(`\n${table}\n\nReports: ${out}/index.html, ${out}/mutation.json, ${out}/scores.md`)
