// `npm run admin -- <command> ...`: the administration CLI. Identity commands are the gateway's
// (it owns the identity schema); audit:* belongs to the audit service.
import { spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import path from 'node:path'
import { loadDotEnv, localSecrets, root } from './lib.mjs'

const [command = ''] = process.argv.slice(2)
const service = command.startsWith('audit:') ? 'audit' : 'gateway'
const cli = path.join(root, 'services', service, 'dist', 'cli', 'admin.js')
if (!existsSync(cli)) {
  console.error(`${cli} is missing: run \`npm start\` (or \`npm run build\`) first`)
  process.exit(1)
}
// The same settings as the stack `npm start` runs: .env, then the secrets it keeps (the chain key).
loadDotEnv()
const env = localSecrets({ ...process.env })
const r = spawnSync(process.execPath, [cli, ...process.argv.slice(2)], { stdio: 'inherit', env })
process.exit(r.status ?? 1)
