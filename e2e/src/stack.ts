import { execFile, spawn, type ChildProcess } from 'node:child_process'
import { createServer } from 'node:net'
import path from 'node:path'
import { promisify } from 'node:util'
import {
  createTestDatabase,
  createTestVhost,
  deleteTestVhost,
  dropTestDatabase,
  waitFor,
} from '@clinic/platform/testing'

const exec = promisify(execFile)
export const ROOT = path.resolve(__dirname, '../..')
export const SERVICES = ['patients', 'appointments', 'comms', 'audit'] as const
type ServiceName = (typeof SERVICES)[number] | 'gateway'

export interface StackInfo {
  gatewayUrl: string
  /** `${gatewayUrl}/api` */
  api: string
  serviceUrls: Record<(typeof SERVICES)[number], string>
  env: Record<string, string>
  pids: number[]
  /** What to clean up afterwards. */
  cleanup: { databaseUrl?: string; amqpUrl?: string; containers?: string[] }
}

/** A port nothing listens on right now (also what a dead upstream looks like). */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer()
    srv.unref()
    srv.on('error', reject)
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number }
      srv.close(() => resolve(port))
    })
  })
}

/** True when a Docker engine answers (then PostgreSQL and RabbitMQ run in Testcontainers). */
export async function dockerAvailable(): Promise<boolean> {
  if (process.env.E2E_USE_DOCKER === '0') return false
  try {
    await exec('docker', ['version', '--format', '{{.Server.Version}}'], { timeout: 5000 })
    return true
  } catch {
    return false
  }
}

async function infrastructure(): Promise<{
  databaseUrl: string
  amqpUrl: string
  cleanup: StackInfo['cleanup']
}> {
  if (await dockerAvailable()) {
    const { GenericContainer, Wait } = await import('testcontainers')
    const pg = await new GenericContainer('postgres:15')
      .withEnvironment({ POSTGRES_HOST_AUTH_METHOD: 'trust', POSTGRES_DB: 'clinic' })
      .withExposedPorts(5432)
      .withWaitStrategy(Wait.forLogMessage(/database system is ready to accept connections/, 2))
      .start()
    const mq = await new GenericContainer('rabbitmq:3.10')
      .withExposedPorts(5672)
      .withWaitStrategy(Wait.forLogMessage(/Server startup complete/))
      .start()
    return {
      databaseUrl: `postgres://postgres@${pg.getHost()}:${pg.getMappedPort(5432)}/clinic`,
      amqpUrl: `amqp://guest:guest@${mq.getHost()}:${mq.getMappedPort(5672)}`,
      cleanup: { containers: [pg.getId(), mq.getId()] },
    }
  }
  // No Docker engine: the machine's PostgreSQL and RabbitMQ, in a database and vhost of our own.
  const databaseUrl = await createTestDatabase(process.env.E2E_DATABASE_URL)
  const amqpUrl = await createTestVhost(process.env.E2E_AMQP_URL)
  return { databaseUrl, amqpUrl, cleanup: { databaseUrl, amqpUrl } }
}

const children: ChildProcess[] = []

/** Starts one service from its build (dist), logs to e2e/logs/<name>.log when E2E_LOGS is set. */
export function startProcess(name: ServiceName, env: Record<string, string>): ChildProcess {
  const child = spawn(process.execPath, [path.join(ROOT, 'services', name, 'dist', 'server.js')], {
    env: { ...process.env, ...env },
    stdio: ['ignore', process.env.E2E_LOGS ? 'inherit' : 'ignore', 'inherit'],
  })
  children.push(child)
  return child
}

export async function runMigrations(env: Record<string, string>) {
  for (const s of ['gateway', ...SERVICES])
    await exec(process.execPath, [path.join(ROOT, 'services', s, 'dist', 'db', 'migrate.js')], {
      env: { ...process.env, ...env },
    })
}

export async function waitHealthy(url: string, timeoutMs = 30_000) {
  await waitFor(
    async () => {
      const res = await fetch(url)
      return res.status === 200
    },
    { timeoutMs, intervalMs: 100, what: `${url} to be healthy` },
  )
}

/**
 * The whole stack as separate processes, the way `npm start` runs it. `amqpVia` may put something
 * between the services and the broker (the outage test's cuttable proxy).
 */
export async function startStack(
  o: { amqpVia?: (amqpUrl: string) => Promise<string> } = {},
): Promise<StackInfo> {
  const infra = await infrastructure()
  const ports = {
    gateway: await freePort(),
    patients: await freePort(),
    appointments: await freePort(),
    comms: await freePort(),
    audit: await freePort(),
  }
  const serviceUrls = Object.fromEntries(
    SERVICES.map((s) => [s, `http://127.0.0.1:${ports[s]}`]),
  ) as StackInfo['serviceUrls']
  const env: Record<string, string> = {
    DATABASE_URL: infra.databaseUrl,
    AMQP_URL: o.amqpVia ? await o.amqpVia(infra.amqpUrl) : infra.amqpUrl,
    INTERNAL_AUTH_SECRET: 'e2e-secret-0123456789abcdef0123456789abcdef',
    LOG_LEVEL: process.env.E2E_LOG_LEVEL ?? 'warn',
    GATEWAY_PORT: String(ports.gateway),
    PATIENTS_PORT: String(ports.patients),
    APPOINTMENTS_PORT: String(ports.appointments),
    COMMS_PORT: String(ports.comms),
    AUDIT_PORT: String(ports.audit),
    PATIENTS_URL: serviceUrls.patients,
    APPOINTMENTS_URL: serviceUrls.appointments,
    COMMS_URL: serviceUrls.comms,
    AUDIT_URL: serviceUrls.audit,
    TOKEN_CACHE_TTL_MS: '1000',
    SMTP_URL: '',
  }
  await runMigrations(env)
  const procs = [...SERVICES.map((s) => startProcess(s, env)), startProcess('gateway', env)]
  const gatewayUrl = `http://127.0.0.1:${ports.gateway}`
  await waitHealthy(`${gatewayUrl}/api/health`)
  return {
    gatewayUrl,
    api: `${gatewayUrl}/api`,
    serviceUrls,
    env,
    pids: procs.map((p) => p.pid!),
    cleanup: infra.cleanup,
  }
}

export async function stopStack(info: StackInfo) {
  for (const pid of info.pids) {
    try {
      process.kill(pid, 'SIGTERM')
    } catch {
      /* already gone */
    }
  }
  await waitFor(() => info.pids.every((pid) => !alive(pid)), {
    timeoutMs: 15_000,
    what: 'services to stop',
  }).catch(() => {
    for (const pid of info.pids) if (alive(pid)) process.kill(pid, 'SIGKILL')
  })
  const { databaseUrl, amqpUrl, containers } = info.cleanup
  if (containers?.length) await exec('docker', ['rm', '-f', ...containers]).catch(() => undefined)
  if (databaseUrl) await dropTestDatabase(databaseUrl)
  if (amqpUrl) await deleteTestVhost(amqpUrl)
}

function alive(pid: number) {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

/** Runs the admin CLI against the stack's database; returns stdout. */
export async function admin(info: Pick<StackInfo, 'env'>, ...args: string[]): Promise<string> {
  const { stdout } = await exec(process.execPath, [path.join(ROOT, 'scripts', 'admin.mjs'), ...args], {
    env: { ...process.env, ...info.env },
  })
  return stdout.trim()
}
