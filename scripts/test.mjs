// `npm test`: every test. Installs what is missing, builds (tsc -b type-checks the sources),
// type-checks the tests, lints, then runs every Jest project: unit, integration (real PostgreSQL
// and RabbitMQ, in a database and vhost of their own) and e2e (the whole stack as processes).
// Extra arguments go to Jest, e.g. `npm test -- --selectProjects services/patients`.
import { build, checkDependencies, ensureInstalled, pnpm, loadDotEnv, run } from './lib.mjs'

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
  pnpm(['exec', 'jest', '--ci', '--maxWorkers=3', ...process.argv.slice(2)])
} catch (err) {
  console.error(err.message)
  process.exit(1)
}
