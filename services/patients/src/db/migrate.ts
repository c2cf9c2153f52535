import { ensureDatabase, exitOnConfigError, migrate } from '@clinic/platform'
import { loadPatientsConfig } from '../config'
import { SCHEMA, migrations } from './migrations'

async function main() {
  const config = loadPatientsConfig()
  await ensureDatabase(config.DATABASE_URL)
  const applied = await migrate(config.DATABASE_URL, SCHEMA, migrations)
  process.stdout.write(`${SCHEMA}: ${applied.length ? `applied ${applied.join(', ')}` : 'up to date'}\n`)
}

main().catch((err) => {
  exitOnConfigError(err)
  process.stderr.write(`${SCHEMA} migrations failed: ${(err as Error).message}\n`)
  process.exit(1)
})
