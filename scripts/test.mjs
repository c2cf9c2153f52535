// `npm test`: every test. Installs what is missing, builds (tsc -b type-checks the sources),
// lints the committed OpenAPI document, type-checks the tests, lints, then runs every Jest
// project: unit, integration (real PostgreSQL and RabbitMQ, in a database and vhost of their
// own) and e2e (the whole stack as processes).
// Extra arguments go to Jest, e.g. `npm test -- --selectProjects services/patients`.
import { existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs'
import path from 'node:path'
import { ensureChromium } from './ensure-chromium.mjs'
import { build, checkDependencies, ensureInstalled, pnpm, loadDotEnv, root, run } from './lib.mjs'

loadDotEnv()
try {
  await checkDependencies()
  ensureInstalled()
  build()
  // The committed contract (docs/openapi.json, `npm run openapi`) against Redocly's
  // recommended-strict rules (redocly.yaml); offline: no telemetry, no update check.
  console.log('> linting the OpenAPI document (redocly)')
  pnpm(['exec', 'redocly', 'lint', 'docs/openapi.json'], {
    env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' },
  })
  console.log('> type-checking tests')
  pnpm(['exec', 'tsc', '-p', 'tsconfig.test.json'])
  console.log('> linting')
  pnpm(['exec', 'eslint', '.'])
  pnpm(['exec', 'prettier', '--check', '--log-level', 'warn', '.'])
  console.log('> checking deploy files (no engine needed)')
  run('bash', ['deploy/check.sh'])
  // The browser tests drive Debian's Chromium (a CI machine starts without it).
  ensureChromium()
  // The fault scenarios time outages to the second, so they run after the rest, alone on the
  // machine, as whole-stack faults should; extra arguments make one run of exactly what is asked.
  const extra = process.argv.slice(2)
  const runs = extra.length
    ? [{ name: 'jest', args: extra }]
    : [
        { name: 'jest', args: ['--ignoreProjects', 'e2e/faults'] },
        { name: 'jest-faults', args: ['--selectProjects', 'e2e/faults'] },
      ]
  const totals = { passed: 0, failed: 0, skipped: 0, total: 0 }
  let failed = null
  for (const { name, args } of runs) {
    console.log(`> ${name} ${args.join(' ')}`)
    const results = path.join(root, 'var', `${name}-results.json`)
    mkdirSync(path.dirname(results), { recursive: true })
    rmSync(results, { force: true })
    try {
      pnpm(['exec', 'jest', '--ci', '--maxWorkers=3', '--json', `--outputFile=${results}`, ...args])
    } catch (err) {
      failed ??= err
    }
    if (existsSync(results)) {
      const r = JSON.parse(readFileSync(results, 'utf8'))
      totals.passed += r.numPassedTests
      totals.failed += r.numFailedTests
      totals.skipped += r.numPendingTests
      totals.total += r.numTotalTests
    }
  }
  // One plain closing line for CI: N passed, N failed.
  console.log(`${totals.passed} passed, ${totals.failed} failed, ${totals.skipped} skipped`)
  if (totals.total === 0) throw new Error('no test ran')
  if (failed) throw failed
} catch (err) {
  console.error(err.message)
  process.exit(1)
}
