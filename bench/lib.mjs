import os from 'node:os'
// Shared by the benchmarks: a throwaway database, processes from the build, CPU time per process.
import { spawn, execFileSync } from 'node:child_process'
import { serviceEnv } from '../scripts/lib.mjs'
import { readdirSync, readFileSync, writeFileSync, mkdirSync } from 'node:fs'
import { createRequire } from 'node:module'
import { createServer as httpServer } from 'node:http'
import { createServer } from 'node:net'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import pg from 'pg'
import autocannon from 'autocannon'

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const platformRequire = createRequire(path.join(ROOT, 'packages', 'platform', 'package.json'))
/** `<DB_ROLE_PREFIX><role>`: the bench's name of a database role (a SET ROLE in a bench's own query). */
export const { stackDbRole } = platformRequire(path.join(ROOT, 'packages', 'platform', 'naming.cjs'))
/** The platform's test helpers, from its build (databases, vhosts, role prefixes). */
export const platformTesting = () =>
  platformRequire(path.join(ROOT, 'packages', 'platform', 'dist', 'testing', 'index.js'))
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

/**
 * A stand-in for the patients service that says every patient exists (its answer is the patient's
 * id, the shape appointments checks), so a bench of bookings measures the appointments service; every
 * booking still makes that call. Its URL (PATIENTS_URL) and the server, to close.
 */
export async function patientsSayingYes() {
  const port = await freePort()
  const server = httpServer((req, res) => {
    req.resume()
    res.writeHead(200, { 'content-type': 'application/json' })
    res.end(JSON.stringify({ id: req.url.split('?')[0].split('/').pop() }))
  }).listen(port, '127.0.0.1')
  return { url: `http://127.0.0.1:${port}`, server }
}

export async function freePort() {
  return new Promise((resolve) => {
    const srv = createServer().listen(0, '127.0.0.1', () => {
      const { port } = srv.address()
      srv.close(() => resolve(port))
    })
  })
}

export function node(script, env, args = [], root = ROOT) {
  return execFileSync(process.execPath, [path.join(root, script), ...args], {
    env: { ...process.env, ...env },
    encoding: 'utf8',
  }).trim()
}

/**
 * A service from the build, on one core when asked. BENCH_SERVICES_ROOT runs the build of another
 * checkout (an earlier commit, for before/after runs that alternate in one session); BENCH_NODE_ARGS
 * adds node flags (e.g. --perf-basic-prof for bench/profile.mjs).
 */
export function startService(name, env, core) {
  const argv = [
    process.execPath,
    ...(process.env.BENCH_NODE_ARGS ? process.env.BENCH_NODE_ARGS.split(' ') : []),
    path.join(process.env.BENCH_SERVICES_ROOT ?? ROOT, 'services', name, 'dist', 'server.js'),
  ]
  // On one core when asked (taskset execs node: the pid is node's).
  const [command, ...args] = core === undefined ? argv : ['taskset', '-c', String(core), ...argv]
  const child = spawn(command, args, {
    env: serviceEnv(name, { ...process.env, LOG_LEVEL: 'warn', ...env }),
    stdio: ['ignore', 'inherit', 'inherit'],
  })
  started.add(child)
  child.on('exit', () => started.delete(child))
  return child
}

/**
 * The services a bench started, stopped when it exits however it ends: a bench that throws must
 * not leave them running, connected to the database name the next run creates again (they would
 * publish its outbox into their own old vhost, and its audit would never see those events).
 */
const started = new Set()
/**
 * The bench's database and the prefix of its roles (benchTenant): dropped when it exits however it
 * ends, the database first, then its roles (cluster-wide, they would outlive it), by a process of
 * its own (an exit handler cannot wait).
 */
const benchDatabases = []
process.on('exit', () => {
  for (const child of started) child.kill('SIGKILL')
  for (const { databaseUrl, rolePrefix } of benchDatabases)
    execFileSync(process.execPath, [path.join(ROOT, 'bench', 'teardown.mjs'), databaseUrl, rolePrefix], {
      stdio: 'inherit',
    })
})

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

/** Busy and total jiffies of the whole machine since boot (/proc/stat): a run's share of it is a ratio. */
export function machineCpu() {
  const [user, nice, system, idle, iowait, irq, softirq, steal] = readFileSync('/proc/stat', 'utf8')
    .split('\n')[0]
    .split(/\s+/)
    .slice(1)
    .map(Number)
  const busy = user + nice + system + irq + softirq + steal
  return { busy, total: busy + idle + iowait }
}

/** CPU seconds of every PostgreSQL process (the server is shared: other work on it counts too). */
export function postgresCpu() {
  let seconds = 0
  for (const pid of readdirSync('/proc').filter((p) => /^\d+$/.test(p)))
    try {
      if (readFileSync(`/proc/${pid}/stat`, 'utf8').includes('(postgres)')) seconds += cpuSeconds(pid)
    } catch {
      // gone meanwhile
    }
  return seconds
}

/**
 * CPU seconds of each backend connected to `db`'s database but `db`'s own, by pid: the services'
 * (a backend that appears during a load counts from 0). The server is shared: the sum over all its
 * processes carried other work, and went negative when a busy backend exited.
 */
export async function databaseBackendCpu(db) {
  const { rows } = await db.query(
    `SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`,
  )
  const out = new Map()
  for (const { pid } of rows)
    try {
      out.set(pid, cpuSeconds(pid))
    } catch {
      // gone meanwhile
    }
  return out
}

/** pids of every process whose command is `name` (PostgreSQL backends, RabbitMQ's beam.smp). */
export const pidsOf = (name) =>
  readdirSync('/proc')
    .filter((p) => /^\d+$/.test(p))
    .filter((p) => {
      try {
        return readFileSync(`/proc/${p}/comm`, 'utf8').trim() === name
      } catch {
        return false
      }
    })
    .map(Number)

/** CPU seconds of these processes together (one gone meanwhile counts 0). */
export const cpuOf = (pids) =>
  pids.reduce((sum, pid) => {
    try {
      return sum + cpuSeconds(pid)
    } catch {
      return sum // gone meanwhile
    }
  }, 0)

export async function load(opts) {
  return autocannon({ connections: 32, duration: 10, ...opts })
}

export function record(name, markdown) {
  mkdirSync(path.join(ROOT, 'bench', 'results'), { recursive: true })
  const file = path.join(ROOT, 'bench', 'results', `${name}.md`)
  writeFileSync(file, markdown)
  // As the repository keeps markdown (npm test checks it): the root's prettier.
  const prettier = createRequire(path.join(ROOT, 'package.json')).resolve('prettier/bin/prettier.cjs')
  execFileSync(process.execPath, [prettier, '--write', '--log-level', 'warn', file], { cwd: ROOT })
  console.log(markdown)
  console.log(`(written to ${path.relative(ROOT, file)})`)
}

export const machine = () =>
  `node ${process.version}, ${os.cpus().length} cores, ${new Date().toISOString().slice(0, 10)}`

export const BENCH_SECRET = 'bench-secret-0123456789abcdef0123456789'

/**
 * A throwaway database with the given services migrated, company 1 with `centers` and a user
 * `bench`; returns the env the services need and the user's API token.
 */
export async function benchTenant(name, { services, centers = [] }) {
  const env = {
    DATABASE_URL: await freshDatabase(name),
    ASSERTION_ROOT_SECRET: BENCH_SECRET,
    // Its services' login roles and the roles their migrations grant to are the bench's own
    // (`t<hex>_clinic_...`), never those of `npm start` or a test run on the same PostgreSQL.
    DB_ROLE_PREFIX: platformTesting().newDbRolePrefix(),
  }
  benchDatabases.push({ databaseUrl: env.DATABASE_URL, rolePrefix: env.DB_ROLE_PREFIX })
  // The schema of the build that runs (BENCH_SERVICES_ROOT: another checkout's).
  for (const s of ['gateway', ...services])
    node(`services/${s}/dist/db/migrate.js`, serviceEnv(s, env), [], process.env.BENCH_SERVICES_ROOT ?? ROOT)
  node('scripts/admin.mjs', env, ['company:create', '--id', '1', '--name', 'Bench'])
  for (const c of centers)
    node('scripts/admin.mjs', env, ['center:create', '--company', '1', '--code', c, '--name', c])
  node('scripts/admin.mjs', env, ['user:create', '--company', '1', '--username', 'bench'])
  return { env, token: node('scripts/admin.mjs', env, ['token:create', '--username', 'bench']) }
}

/** One service behind a gateway without a practical rate limit; `api` ends in /api. */
export async function behindGateway(service, env) {
  const port = await freePort()
  const gatewayPort = await freePort()
  const upper = service.toUpperCase()
  const procs = {
    service: startService(service, { ...env, [`${upper}_PORT`]: String(port) }),
    gateway: startService('gateway', {
      ...env,
      GATEWAY_PORT: String(gatewayPort),
      [`${upper}_URL`]: `http://127.0.0.1:${port}`,
      RATE_LIMIT_PER_MINUTE: '100000000',
      RATE_LIMIT_PER_ADDRESS_PER_MINUTE: '100000000',
    }),
  }
  const api = `http://127.0.0.1:${gatewayPort}/api`
  // The service itself first: the gateway's document answers while a service is still starting.
  await waitOk(`http://127.0.0.1:${port}/health/ready`)
  await waitOk(`${api}/openapi.json`)
  return { api, procs, stop: () => Object.values(procs).forEach((p) => p.kill('SIGTERM')) }
}

/** autocannon at `connections` for `duration` s; one markdown table row of rate and latency. */
export async function measure(url, token, connections, duration = 8) {
  const r = await load({ url, headers: { 'x-service-token': token }, connections, duration })
  return {
    result: r,
    row: `${r.requests.average.toFixed(0)} | ${r.latency.p50} | ${r.latency.p99} | ${r.non2xx} |`,
  }
}

/**
 * A bare node:http server in a process of its own answering `body` as JSON: the machine's floor,
 * measured in the same run as what it is compared with.
 */
export async function bareHttp(body) {
  const port = await freePort()
  const child = spawn(
    process.execPath,
    [
      '-e',
      `const body = Buffer.from(process.env.BODY)
       require('node:http').createServer((req, res) => {
         res.writeHead(200, { 'content-type': 'application/json', 'content-length': body.length })
         res.end(body)
       }).listen(${port}, '127.0.0.1')`,
    ],
    { env: { ...process.env, BODY: body }, stdio: 'inherit' },
  )
  const url = `http://127.0.0.1:${port}/`
  await waitOk(url)
  return { url, pid: child.pid, stop: () => child.kill('SIGTERM') }
}

/** A local SMTP server that accepts every message: the comms benches' sink. */
export async function smtpSink() {
  const require = createRequire(path.join(ROOT, 'services', 'comms', 'package.json'))
  const { SMTPServer } = require('smtp-server')
  let received = 0
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS', 'AUTH'],
    logger: false,
    onData(stream, _s, cb) {
      stream.on('data', () => undefined)
      stream.on('end', () => {
        received++
        cb()
      })
    },
  })
  await new Promise((r) => server.listen(0, '127.0.0.1', r))
  return {
    url: `smtp://127.0.0.1:${server.server.address().port}`,
    received: () => received,
    close: () => server.close(),
  }
}

/**
 * `services` and a gateway from the build, on free ports, in a RabbitMQ vhost of their own, each
 * service as a broker user of this run (packages/platform/broker-users.cjs, deploy's permissions),
 * without practical rate limits; `api` ends in /api. `stop()` ends them and deletes the vhost and
 * the users.
 */
export async function startStack(base, services, extra = {}) {
  const { createTestVhost, deleteTestVhost } = platformTesting()
  const brokerUsers = platformRequire(path.join(ROOT, 'packages', 'platform', 'broker-users.cjs'))
  const amqpUrl = await createTestVhost()
  const brokerPrefix = brokerUsers.newBrokerPrefix()
  await brokerUsers.createBrokerUsers({ amqpUrl, prefix: brokerPrefix, rootSecret: BENCH_SECRET })
  const ports = { gateway: await freePort() }
  for (const s of services) ports[s] = await freePort()
  const env = {
    ...base,
    AMQP_URL: amqpUrl,
    BROKER_ROOT_SECRET: BENCH_SECRET,
    BROKER_USER_PREFIX: brokerPrefix,
    AUDIT_CHAIN_KEY: BENCH_SECRET,
    // The bench's own checkpoints, not the developer's var/audit-checkpoints.jsonl.
    AUDIT_CHECKPOINT_FILE: path.join(os.tmpdir(), `clinic-bench-checkpoints-${process.pid}.jsonl`),
    COMMS_LINK_SECRET: BENCH_SECRET,
    // No Twilio here (and SMTP only where a bench sets SMTP_URL): the rest goes to files.
    COMMS_DELIVERY: 'files',
    RATE_LIMIT_PER_MINUTE: '100000000',
    RATE_LIMIT_PER_ADDRESS_PER_MINUTE: '100000000',
    ...Object.fromEntries(
      Object.entries(ports).flatMap(([s, port]) => [
        [`${s.toUpperCase()}_PORT`, String(port)],
        [`${s.toUpperCase()}_URL`, `http://127.0.0.1:${port}`],
      ]),
    ),
    ...extra,
  }
  const procs = Object.fromEntries([...services, 'gateway'].map((s) => [s, startService(s, env)]))
  const api = `http://127.0.0.1:${ports.gateway}/api`
  await waitOk(`${api}/openapi.json`)
  for (const s of services) await waitOk(`http://127.0.0.1:${ports[s]}/health/ready`)
  return {
    api,
    env,
    ports,
    procs,
    async stop() {
      for (const p of Object.values(procs)) p.kill('SIGTERM')
      await new Promise((r) => setTimeout(r, 2000))
      await deleteTestVhost(amqpUrl)
      await brokerUsers.removeBrokerUsers({ prefix: brokerPrefix })
    },
  }
}

/**
 * Samples the client backends of database `datname` every 100 ms through `mon` (a pg client
 * connected to another database, so that the sampling is not counted in this one): how many are
 * active (by `label(query)`) and on what they wait, how many idle in a transaction (after what);
 * with `cpu`, their CPU seconds too (a backend that appears mid-phase counts from 0). Resolves to
 * `stop()`, which resolves to the averages per sample and the `top` [active, waits, idle] of each.
 */
export async function sampleBackends(mon, datname, { label, excludePid = 0, cpu = false, top = [4, 3, 3] }) {
  const base0 = new Map()
  const last = new Map()
  const active = new Map()
  const waits = new Map()
  const idleInTx = new Map()
  let ticks = 0
  const bump = (m, k) => m.set(k, (m.get(k) ?? 0) + 1)
  const backends = async () =>
    (
      await mon.query(
        `SELECT pid, state, wait_event_type, wait_event, left(query, 300) AS query FROM pg_stat_activity
          WHERE datname = $1 AND backend_type = 'client backend' AND pid <> $2`,
        [datname, excludePid],
      )
    ).rows
  const read = (pid) => {
    try {
      last.set(pid, cpuSeconds(pid))
    } catch {
      // gone meanwhile: its last reading stays
    }
  }
  if (cpu) for (const r of await backends()) base0.set(r.pid, cpuSeconds(r.pid))
  let stopped = false
  const loop = (async () => {
    while (!stopped) {
      ticks++
      for (const r of await backends()) {
        if (r.state === 'active') {
          bump(active, label(r.query))
          if (r.wait_event) bump(waits, `${r.wait_event_type}:${r.wait_event}`)
        } else if (r.state === 'idle in transaction') bump(idleInTx, label(r.query))
        if (!cpu) continue
        if (!base0.has(r.pid)) base0.set(r.pid, 0)
        if (ticks % 10 === 0) read(r.pid)
      }
      await new Promise((r) => setTimeout(r, 100))
    }
  })()
  return async () => {
    stopped = true
    await loop
    let seconds = 0
    if (cpu) {
      for (const pid of base0.keys()) read(pid)
      for (const [pid, b] of base0) seconds += (last.get(pid) ?? b) - b
    }
    const best = (m, n) =>
      [...m.entries()]
        .sort((a, b) => b[1] - a[1])
        .slice(0, n)
        .map(([k, v]) => `${k} ${(v / ticks).toFixed(2)}`)
        .join(', ')
    const sum = (m) => [...m.values()].reduce((s, v) => s + v, 0) / ticks
    return {
      ...(cpu ? { cpu: seconds } : {}),
      active: sum(active),
      idleInTx: sum(idleInTx),
      topActive: best(active, top[0]),
      topWaits: best(waits, top[1]),
      topIdleInTx: best(idleInTx, top[2]),
    }
  }
}
