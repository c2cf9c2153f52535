// `npm run migrate`: creates the database if needed and runs every service's migrations, each in
// its own schema. `npm start` runs this first.
import { existsSync } from 'node:fs'
import path from 'node:path'
import { root, run, services, serviceEnv, loadDotEnv } from './lib.mjs'

export function migrateAll(env = process.env) {
  for (const s of services) {
    const script = path.join(root, 'services', s, 'dist', 'db', 'migrate.js')
    if (!existsSync(script)) throw new Error(`${script} is missing: build first (npm run build)`)
    run(process.execPath, [script], { env: serviceEnv(s, env) })
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  loadDotEnv()
  try {
    migrateAll()
  } catch (err) {
    console.error(err.message)
    process.exit(1)
  }
}
