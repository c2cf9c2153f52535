// `npm test`: every test. Installs what is missing, builds (tsc -b type-checks the sources),
// lints the committed OpenAPI document, type-checks the tests, lints, then runs every Jest
// project: unit, integration (real PostgreSQL and RabbitMQ, in a database and vhost of their
// own), e2e (the whole stack as processes, PostgreSQL and RabbitMQ in containers through
// Testcontainers when a Docker engine answers) and, last, the container suite (deploy: the images
// built and the Compose stack run). A Docker engine is started for the run when none answers
// (scripts/ensure-docker.mjs) and stopped at its end.
// Extra arguments go to Jest, e.g. `npm test -- --selectProjects services/patients`.
import { spawn } from 'node:child_process'
import { existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs'
import path from 'node:path'
import { ensureTestPackages } from './ensure-chromium.mjs'
import { ensureDocker } from './ensure-docker.mjs'
import { build, checkDependencies, ensureInstalled, pnpm, loadDotEnv, root } from './lib.mjs'

/**
 * Runs the steps at once, each a binary of the workspace (`bin`) or a command; prints each step's
 * output whole, in order, once all are done; throws naming every step that failed.
 */
async function atOnce(steps) {
  const env = { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' }
  const results = await Promise.all(
    steps.map(
      ({ title, bin, cmd, args }) =>
        new Promise((resolve) => {
          const child = spawn(cmd ?? path.join(root, 'node_modules', '.bin', bin), args, { cwd: root, env })
          let out = ''
          child.stdout.on('data', (d) => (out += d))
          child.stderr.on('data', (d) => (out += d))
          child.on('error', (err) => resolve({ title, code: 1, out: `${out}${err.message}\n` }))
          child.on('close', (code, signal) => resolve({ title, code: code ?? signal, out }))
        }),
    ),
  )
  for (const { title, out } of results) {
    console.log(`> ${title}`)
    if (out) process.stdout.write(out)
  }
  const failed = results.filter((r) => r.code !== 0)
  if (failed.length) throw new Error(`failed: ${failed.map((r) => `${r.title} (exit ${r.code})`).join(', ')}`)
}

loadDotEnv()
let engine = null
try {
  await checkDependencies()
  ensureInstalled()
  build()
  // The committed contract (docs/openapi.json, `npm run openapi`) against Redocly's
  // recommended-strict rules (redocly.yaml); offline: no telemetry, no update check.
  // Independent of each other, and each mostly one process's CPU: at once (on 2 cores, half the time).
  await atOnce([
    { title: 'linting the OpenAPI document (redocly)', bin: 'redocly', args: ['lint', 'docs/openapi.json'] },
    { title: 'type-checking tests', bin: 'tsc', args: ['-p', 'tsconfig.test.json'] },
    { title: 'linting (eslint)', bin: 'eslint', args: ['.'] },
    {
      title: 'formatting (prettier --check)',
      bin: 'prettier',
      args: ['--check', '--log-level', 'warn', '.'],
    },
    { title: 'checking deploy files (no engine needed)', cmd: 'bash', args: ['deploy/check.sh'] },
  ])
  // The browser tests drive Debian's Chromium, documents' PDF tests run poppler's pdftotext and
  // pdftoppm (a CI machine starts without them).
  ensureTestPackages()
  // The engine the e2e suite (Testcontainers) and the container suite run on.
  engine = await ensureDocker()
  // CI proves the containers run (DESIGN.md section 18): a machine where no engine can be had fails
  // the run here, rather than pass with the container suites skipped or on the host's services.
  if (!engine && process.env.CI === 'true')
    throw new Error(
      'CI=true: no Docker engine answers and none could be started (root and apt-get are needed)',
    )
  // The fault scenarios time outages to the second, so they run after the rest, alone on the
  // machine, as whole-stack faults should; extra arguments make one run of exactly what is asked.
  const extra = process.argv.slice(2)
  const runs = extra.length
    ? [{ name: 'jest', args: extra }]
    : [
        { name: 'jest', args: ['--ignoreProjects', 'e2e/faults', 'deploy'] },
        { name: 'jest-faults', args: ['--selectProjects', 'e2e/faults'] },
        // Some twenty containers and the image builds: alone, after the rest.
        { name: 'jest-containers', args: ['--selectProjects', 'deploy'] },
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
  process.exitCode = 1
} finally {
  engine?.stop()
}
