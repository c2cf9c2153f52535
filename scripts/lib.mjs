// Shared by the root scripts (start, test, migrate, admin). Plain Node, no dependencies:
// these run before anything is installed.
import { spawnSync, execFileSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { existsSync, mkdirSync, statSync, readFileSync, writeFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import path from 'node:path'
import naming from '../packages/platform/naming.cjs'
import serviceEnvModule from './service-env.cjs'
import net from 'node:net'

const { serviceEnv: sharedServiceEnv } = serviceEnvModule

export const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const pkg = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8'))
const wantedPnpm = pkg.packageManager.split('@')[1]

let pnpmCmd
/** The pnpm the project pins: the one on PATH if it is that version, else through npx (npm registry). */
export function pnpmCommand() {
  if (pnpmCmd) return pnpmCmd
  try {
    const v = execFileSync('pnpm', ['--version'], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    }).trim()
    if (v === wantedPnpm) return (pnpmCmd = ['pnpm'])
  } catch {
    /* not installed */
  }
  return (pnpmCmd = ['npx', '--yes', `pnpm@${wantedPnpm}`])
}

export function run(cmd, args, opts = {}) {
  const r = spawnSync(cmd, args, { stdio: 'inherit', cwd: root, ...opts })
  if (r.status !== 0) {
    const why = r.error ? r.error.message : `exit ${r.status ?? r.signal}`
    throw new Error(`${cmd} ${args.join(' ')} failed (${why})`)
  }
}

export function pnpm(args, opts) {
  const [cmd, ...pre] = pnpmCommand()
  run(cmd, [...pre, ...args], opts)
}

/** Installs dependencies when node_modules is missing or older than the lockfile. */
export function ensureInstalled() {
  const marker = path.join(root, 'node_modules', '.modules.yaml')
  const lock = path.join(root, 'pnpm-lock.yaml')
  if (existsSync(marker) && statSync(marker).mtimeMs >= statSync(lock).mtimeMs) return
  console.log('> installing dependencies (pnpm install --frozen-lockfile)')
  pnpm(['install', '--frozen-lockfile', '--prefer-offline'])
}

export function build() {
  console.log('> building (tsc -b)')
  pnpm(['exec', 'tsc', '-b'])
}

export const defaults = {
  DATABASE_URL: 'postgres://postgres@127.0.0.1:5432/clinic',
  AMQP_URL: 'amqp://guest:guest@127.0.0.1:5672',
}

/** A process's environment in the local stack: service-env.cjs, with the default database. */
export function serviceEnv(name, env) {
  return sharedServiceEnv(name, env, env.DATABASE_URL || defaults.DATABASE_URL)
}

function reachable(urlString, defaultPort) {
  const url = new URL(urlString)
  return new Promise((resolve) => {
    const socket = net.connect({ host: url.hostname, port: Number(url.port || defaultPort), timeout: 3000 })
    socket.once('connect', () => (socket.destroy(), resolve(true)))
    socket.once('timeout', () => (socket.destroy(), resolve(false)))
    socket.once('error', () => resolve(false))
  })
}

function redact(urlString) {
  const url = new URL(urlString)
  if (url.password) url.password = '***'
  return url.toString()
}

/** One clear line per dependency that cannot be reached, then exit 1. */
export async function checkDependencies(env = process.env) {
  const db = env.DATABASE_URL || defaults.DATABASE_URL
  const amqp = env.AMQP_URL || defaults.AMQP_URL
  const problems = []
  if (!(await reachable(db, 5432)))
    problems.push(
      `PostgreSQL is not reachable at ${redact(db)} (DATABASE_URL). Start it: pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start`,
    )
  if (!(await reachable(amqp, 5672)))
    problems.push(
      `RabbitMQ is not reachable at ${redact(amqp)} (AMQP_URL). Start it: rabbitmq-server -detached`,
    )
  if (problems.length) {
    for (const p of problems) console.error(p)
    process.exit(1)
  }
}

/** packages/platform/services.json: the one list of services (the gateway, then the resource services). */
export const serviceList = naming.list
/** Every process of the stack, the gateway first: [{ name, port, replicas, families? }]. */
export const apps = naming.apps
/** How a service's names are made (packages/platform/naming.cjs). */
export const { namesOf, envName } = naming
/** Their names: gateway, patients, ... */
export const services = apps.map((s) => s.name)

/** Reads `.env` at the root when present (variables already set win). */
export function loadDotEnv() {
  const file = path.join(root, '.env')
  if (existsSync(file)) process.loadEnvFile(file)
}

// The local stack's secrets when `.env` sets none: made once per checkout and kept (git-ignored) in
// var/local-secrets.env, so a restarted stack still verifies the audit trail it wrote, the admin
// CLI (another terminal) uses the same chain key, the webhooks service still opens the endpoint
// secrets it sealed and the patient links comms sent still open. Anywhere else, set them yourself.
const localSecretsFile = path.join(root, 'var', 'local-secrets.env')
const localSecretNames = [
  'ASSERTION_ROOT_SECRET',
  'BROKER_ROOT_SECRET',
  'AUDIT_CHAIN_KEY',
  'WEBHOOKS_SECRET_KEY',
  'COMMS_LINK_SECRET',
  'DOCUMENTS_LINK_SECRET',
]

/** Fills the secrets `env` lacks from var/local-secrets.env; with `create`, makes the missing ones. */
export function localSecrets(env, { create = false } = {}) {
  const text = existsSync(localSecretsFile) ? readFileSync(localSecretsFile, 'utf8') : ''
  const kept = Object.fromEntries(
    text
      .split('\n')
      .filter(Boolean)
      .map((l) => l.split('=', 2)),
  )
  const missing = localSecretNames.filter((n) => !env[n] && !kept[n])
  if (create && missing.length) {
    for (const n of missing) kept[n] = randomBytes(32).toString('hex')
    mkdirSync(path.dirname(localSecretsFile), { recursive: true })
    const lines = localSecretNames.filter((n) => kept[n]).map((n) => `${n}=${kept[n]}`)
    writeFileSync(localSecretsFile, `${lines.join('\n')}\n`, { mode: 0o600 })
  }
  for (const n of localSecretNames) if (!env[n] && kept[n]) env[n] = kept[n]
  return env
}
