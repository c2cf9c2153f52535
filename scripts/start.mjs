// `npm start`: install what is missing, build, migrate, then run the gateway and the four services
// as separate processes with prefixed logs. Ctrl-C (or SIGTERM) stops them all.
import { spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import path from 'node:path'
import readline from 'node:readline'
import { build, checkDependencies, ensureInstalled, loadDotEnv, root, services } from './lib.mjs'
import { migrateAll } from './migrate.mjs'

loadDotEnv()
const env = { ...process.env }
if (!env.INTERNAL_AUTH_SECRET) {
  // Only for this run on this machine; set INTERNAL_AUTH_SECRET yourself anywhere else.
  env.INTERNAL_AUTH_SECRET = randomBytes(32).toString('hex')
}

try {
  await checkDependencies(env)
  ensureInstalled()
  build()
  console.log('> migrating')
  migrateAll(env)
} catch (err) {
  console.error(err.message)
  process.exit(1)
}

const colors = { gateway: 36, patients: 32, appointments: 33, comms: 35, audit: 34 }
const children = new Map()
let stopping = false

function prefix(name, stream, out) {
  const label = process.stdout.isTTY ? `\x1b[${colors[name]}m[${name}]\x1b[0m ` : `[${name}] `
  readline.createInterface({ input: stream }).on('line', (line) => out.write(label + line + '\n'))
}

// Services first, the gateway last (it proxies to them).
for (const name of [...services.filter((s) => s !== 'gateway'), 'gateway']) {
  const child = spawn(process.execPath, [path.join(root, 'services', name, 'dist', 'server.js')], {
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  prefix(name, child.stdout, process.stdout)
  prefix(name, child.stderr, process.stderr)
  children.set(name, child)
  child.on('exit', (code, signal) => {
    children.delete(name)
    if (!stopping) {
      console.error(`[${name}] exited (${signal ?? code}); stopping the stack`)
      stop(1)
    } else if (children.size === 0) process.exit(process.exitCode ?? 0)
  })
}

function stop(code = 0) {
  if (stopping) return
  stopping = true
  process.exitCode = code
  for (const child of children.values()) child.kill('SIGTERM')
  setTimeout(() => {
    for (const child of children.values()) child.kill('SIGKILL')
    process.exit(code)
  }, 15_000).unref()
  if (children.size === 0) process.exit(code)
}
process.on('SIGINT', () => stop(0))
process.on('SIGTERM', () => stop(0))

const port = env.GATEWAY_PORT || '8080'
const base = `http://127.0.0.1:${port}/api`
for (let i = 0; i < 120 && !stopping; i++) {
  try {
    const res = await fetch(`${base}/health`)
    if (res.ok) {
      console.log(`> Clinic API ready on ${base} (docs: ${base}/docs). Ctrl-C stops everything.`)
      break
    }
  } catch {
    /* not up yet */
  }
  await new Promise((r) => setTimeout(r, 500))
}
