import os from 'node:os'
// Shared by the benchmarks: a throwaway database, processes from the build, CPU time per process.
import { spawn, execFileSync } from 'node:child_process'
import { readFileSync, writeFileSync, mkdirSync } from 'node:fs'
import { createServer } from 'node:net'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import pg from 'pg'
import autocannon from 'autocannon'

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const BASE_DB = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'

export async function freshDatabase(name) {
  const admin = new pg.Client({ connectionString: BASE_DB })
  await admin.connect()
  await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
  await admin.query(`CREATE DATABASE ${name}`)
  await admin.end()
  const u = new URL(BASE_DB)
  u.pathname = `/${name}`
  return u.toString()
}

export async function freePort() {
  return new Promise((resolve) => {
    const srv = createServer().listen(0, '127.0.0.1', () => {
      const { port } = srv.address()
      srv.close(() => resolve(port))
    })
  })
}

export function node(script, env, args = []) {
  return execFileSync(process.execPath, [path.join(ROOT, script), ...args], {
    env: { ...process.env, ...env },
    encoding: 'utf8',
  }).trim()
}

export function startService(name, env) {
  const child = spawn(
    process.execPath,
    [
      ...(process.env.BENCH_NODE_ARGS ? process.env.BENCH_NODE_ARGS.split(' ') : []),
      path.join(ROOT, 'services', name, 'dist', 'server.js'),
    ],
    {
      env: { ...process.env, LOG_LEVEL: 'warn', ...env },
      stdio: ['ignore', 'inherit', 'inherit'],
    },
  )
  return child
}

export async function waitOk(url, timeoutMs = 30_000) {
  const end = Date.now() + timeoutMs
  while (Date.now() < end) {
    try {
      if ((await fetch(url)).status < 500) return
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 100))
  }
  throw new Error(`${url} did not come up`)
}

/** user + system CPU seconds a process has used so far (Linux /proc). */
export function cpuSeconds(pid) {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ')
  const ticks = Number(fields[11]) + Number(fields[12])
  return ticks / 100
}

export async function load(opts) {
  return autocannon({ connections: 32, duration: 10, ...opts })
}

export function record(name, markdown) {
  mkdirSync(path.join(ROOT, 'bench', 'results'), { recursive: true })
  const file = path.join(ROOT, 'bench', 'results', `${name}.md`)
  writeFileSync(file, markdown)
  console.log(markdown)
  console.log(`(written to ${path.relative(ROOT, file)})`)
}

export const machine = () =>
  `node ${process.version}, ${os.cpus().length} cores, ${new Date().toISOString().slice(0, 10)}`
