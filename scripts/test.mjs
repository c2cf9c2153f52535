// `npm test`: every test. Installs what is missing, builds (tsc -b type-checks the sources),
// type-checks the tests, lints, then runs every Jest project: unit, integration (real PostgreSQL
// and RabbitMQ, in a database and vhost of their own) and e2e (the whole stack as processes).
// Extra arguments go to Jest, e.g. `npm test -- --selectProjects services/patients`.
import { existsSync, mkdirSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { build, checkDependencies, ensureInstalled, pnpm, loadDotEnv, root, run } from './lib.mjs'

loadDotEnv()
try {
  await checkDependencies()
  ensureInstalled()
  build()
  console.log('> type-checking tests')
  pnpm(['exec', 'tsc', '-p', 'tsconfig.test.json'])
  console.log('> linting')
  pnpm(['exec', 'eslint', '.'])
  pnpm(['exec', 'prettier', '--check', '--log-level', 'warn', '.'])
  console.log('> checking deploy files (no engine needed)')
  run('bash', ['deploy/check.sh'])
  console.log('> jest')
  const results = path.join(root, 'var', 'jest-results.json')
  mkdirSync(path.dirname(results), { recursive: true })
  let failed = null
  try {
    pnpm([
      'exec',
      'jest',
      '--ci',
      '--maxWorkers=3',
      '--json',
      `--outputFile=${results}`,
      ...process.argv.slice(2),
    ])
  } catch (err) {
    failed = err
  }
  // One plain closing line for CI: N passed, N failed.
  if (existsSync(results)) {
    const r = JSON.parse(readFileSync(results, 'utf8'))
    console.log(`${r.numPassedTests} passed, ${r.numFailedTests} failed, ${r.numPendingTests} skipped`)
    if (r.numTotalTests === 0) throw new Error('no test ran')
  }
  if (failed) throw failed
} catch (err) {
  console.error(err.message)
  process.exit(1)
}
