import os from 'node:os'
import { execFile, spawn, type ChildProcess } from 'node:child_process'
import {
  closeSync,
  existsSync,
  mkdtempSync,
  openSync,
  readFileSync,
  readdirSync,
  readlinkSync,
  rmSync,
  writeFileSync,
} from 'node:fs'
import path from 'node:path'
import { promisify } from 'node:util'
import { deleteTestVhost, dropTestDatabase, freePort, removeDbRoles, waitFor } from '@clinic/platform/testing'
import { GATEWAY_ISSUER, parsePrivateKey, type AssertionSigner } from '@clinic/platform'
import { envName } from '@clinic/platform/naming'
import serviceList from '@clinic/platform/services.json'
import { assertionKeyPair, serviceEnv } from '../../scripts/service-env.cjs'
import { removeStackBrokerUsers } from './broker'
import {
  SHARED_INFRASTRUCTURE,
  removeContainers,
  stackPlaceOn,
  startInfrastructure,
  type Infrastructure,
} from './infrastructure'

const exec = promisify(execFile)
export const ROOT = path.resolve(__dirname, '../..')
/** The resource services of packages/platform/services.json (the gateway comes on top). */
export const SERVICES: readonly string[] = serviceList.services.map((s) => s.name)
type ServiceName = string

export interface StackInfo {
  gatewayUrl: string
  /** `${gatewayUrl}/api` */
  api: string
  serviceUrls: Record<string, string>
  env: Record<string, string>
  pids: number[]
  /** The pid of each process by service name ('gateway' too). */
  processes: Record<string, number>
  /** Where each process of the stack writes its logs (stdout and stderr), by service name. */
  logFiles: Record<string, string>
  /** The container of the stack's RabbitMQ (rabbitmqctl runs in it); absent on the machine's. */
  brokerContainer?: string
  /** What to clean up afterwards (`containers`: those started for this stack, removed with it). */
  cleanup: { databaseUrl?: string; amqpUrl?: string; containers?: string[]; logDir?: string }
}

const children: ChildProcess[] = []

/**
 * Starts one service from its build (dist). Its stdout and stderr go to `<E2E_LOG_DIR>/<name>.log`
 * (the stack's env names the folder), where tests read what the services logged.
 */
export function startProcess(name: ServiceName, env: Record<string, string>): ChildProcess {
  const log = env.E2E_LOG_DIR ? openSync(path.join(env.E2E_LOG_DIR, `${name}.log`), 'a') : 'ignore'
  const child = spawn(process.execPath, [path.join(ROOT, 'services', name, 'dist', 'server.js')], {
    env: { ...process.env, ...serviceEnv(name, env) },
    stdio: ['ignore', log, log],
  })
  if (typeof log === 'number') closeSync(log) // the child has its own copy
  children.push(child)
  return child
}

/** The ChildProcess this module started with that pid (to watch its exit). */
export const childOf = (pid: number): ChildProcess | undefined => children.find((c) => c.pid === pid)

export async function runMigrations(env: Record<string, string>) {
  for (const s of ['gateway', ...SERVICES])
    await exec(process.execPath, [path.join(ROOT, 'services', s, 'dist', 'db', 'migrate.js')], {
      env: { ...process.env, ...serviceEnv(s, env) },
    })
}

export async function waitHealthy(url: string, timeoutMs = 120_000) {
  await waitFor(
    async () => {
      const res = await fetch(url)
      return res.status === 200
    },
    { timeoutMs, intervalMs: 100, what: `${url} to be healthy` },
  )
}

/**
 * The whole stack as separate processes, the way `npm start` runs it. `amqpVia` and `databaseVia`
 * may put something between the services and the broker or the database (a cuttable proxy).
 */
export async function startStack(
  o: {
    amqpVia?: (amqpUrl: string) => Promise<string>
    databaseVia?: (databaseUrl: string) => Promise<string>
    /** Settings on top of the defaults below. */
    env?: Record<string, string>
  } = {},
): Promise<StackInfo> {
  const shared = process.env[SHARED_INFRASTRUCTURE]
  const infra = shared ? (JSON.parse(shared) as Infrastructure) : await startInfrastructure()
  try {
    return await startStackOn(infra, o)
  } catch (err) {
    await removeContainers(infra.containers)
    throw err
  }
}

async function startStackOn(
  infra: Infrastructure,
  o: Parameters<typeof startStack>[0] & object,
): Promise<StackInfo> {
  const { databaseUrl, amqpUrl, brokerEnv, dbRolePrefix } = await stackPlaceOn(infra)
  // Kept after the run when E2E_LOGS is set (its path is printed), else removed with the stack.
  const logDir = mkdtempSync(path.join(os.tmpdir(), 'clinic-e2e-logs-'))
  if (process.env.E2E_LOGS) process.stderr.write(`e2e: service logs in ${logDir}\n`)
  const ports: Record<string, number> = {}
  for (const s of ['gateway', ...SERVICES]) ports[s] = await freePort()
  const serviceUrls = Object.fromEntries(SERVICES.map((s) => [s, `http://127.0.0.1:${ports[s]}`]))
  const env: Record<string, string> = {
    DATABASE_URL: o.databaseVia ? await o.databaseVia(databaseUrl) : databaseUrl,
    AMQP_URL: o.amqpVia ? await o.amqpVia(amqpUrl) : amqpUrl,
    // Each process's assertion keys are derived from it (service-env.cjs); no process gets it.
    ASSERTION_ROOT_SECRET: 'e2e-assertion-root-0123456789abcdef0123456789',
    ...brokerEnv,
    // Its services log in as `<prefix>clinic_<name>` and run as `<prefix>clinic_<name>_app`: no role
    // of another stack on this PostgreSQL (nor of the machine's `npm start`).
    DB_ROLE_PREFIX: dbRolePrefix,
    AUDIT_CHAIN_KEY: 'e2e-audit-chain-key-0123456789abcdef012345678',
    WEBHOOKS_SECRET_KEY: 'e2e-webhooks-secret-key-0123456789abcdef01234',
    COMMS_LINK_SECRET: 'e2e-comms-link-secret-0123456789abcdef0123456',
    DOCUMENTS_LINK_SECRET: 'e2e-documents-link-secret-0123456789abcdef01',
    // The suites' webhook receivers listen on 127.0.0.1 over plain http (development only).
    WEBHOOKS_ALLOW_INSECURE: 'true',
    // Production's level, so the suites see what production would log (the fuzz reads the files).
    LOG_LEVEL: process.env.E2E_LOG_LEVEL ?? 'info',
    // Several stacks (and CI's other suites) share one PostgreSQL's 100 connections.
    DB_POOL_MAX: '4',
    E2E_LOG_DIR: logDir,
    ...Object.fromEntries(Object.entries(ports).map(([s, port]) => [envName(s, 'PORT'), String(port)])),
    ...Object.fromEntries(Object.entries(serviceUrls).map(([s, url]) => [envName(s, 'URL'), url])),
    TOKEN_CACHE_TTL_MS: '1000',
    // Every client of the suites is 127.0.0.1: the per-address limit would count them all as one.
    RATE_LIMIT_PER_ADDRESS_PER_MINUTE: '10000000',
    // ...and their failed authentications (suites test refusals on purpose): scopes.e2e starts a
    // gateway of its own with the default limit.
    AUTH_FAILURES_PER_ADDRESS_PER_MINUTE: '10000000',
    SMTP_URL: '',
    COMMS_DELIVERY: 'files', // no SMTP/Twilio: .eml files and sms.jsonl here
    OUTBOX_DIR: path.join(os.tmpdir(), `clinic-e2e-outbox-${process.pid}-${Date.now().toString(36)}`),
    DELIVERY_RETRY_BASE_MS: '100',
    // Clocks the suites move (moveClock, moveGatewayClock, moveAppointmentsClock): comms' reminders
    // and links, exports, holds and waitlist offers.
    ...clockFiles(logDir),
    EXPORT_PAGE_SIZE: '20', // exports of many pages, of small companies
    // The stack's own audit checkpoints, never the developer's var/ (its companies are others).
    AUDIT_CHECKPOINT_FILE: path.join(logDir, 'audit-checkpoints.jsonl'),
    PUBLIC_BASE_URL: `http://127.0.0.1:${ports.gateway}`,
    ...o.env,
  }
  await runMigrations(env)
  const names = [...SERVICES, 'gateway']
  const procs = names.map((s) => startProcess(s, env))
  const gatewayUrl = `http://127.0.0.1:${ports.gateway}`
  await waitHealthy(`${gatewayUrl}/api/health`)
  // Two stacks started at once on one machine (the README suite beside the others) may draw the
  // same free port: the loser exits, and its health checks would be answered by the other stack.
  await waitFor(() => names.every((s, i) => listensOn(procs[i]!, ports[s]!)), {
    timeoutMs: 10_000,
    what: `each service of the stack on its own port (${JSON.stringify(ports)}; a port another process took fails this)`,
  })
  return {
    gatewayUrl,
    api: `${gatewayUrl}/api`,
    serviceUrls,
    env,
    pids: procs.map((p) => p.pid!),
    processes: Object.fromEntries(names.map((s, i) => [s, procs[i]!.pid!])),
    logFiles: Object.fromEntries(names.map((s) => [s, path.join(logDir, `${s}.log`)])),
    brokerContainer: infra.brokerContainer,
    cleanup: {
      databaseUrl,
      amqpUrl,
      containers: infra.containers,
      logDir: process.env.E2E_LOGS ? undefined : logDir,
    },
  }
}

/** The stack's gateway signing key: a test that calls a service directly signs as the gateway. */
export function gatewaySignerOf(info: StackInfo): AssertionSigner {
  const { privateKey } = assertionKeyPair(info.env.ASSERTION_ROOT_SECRET!, GATEWAY_ISSUER)
  return { issuer: GATEWAY_ISSUER, key: parsePrivateKey(privateKey) }
}

const clockFiles = (logDir: string) => ({
  COMMS_CLOCK_FILE: path.join(logDir, 'comms-clock'),
  GATEWAY_CLOCK_FILE: path.join(logDir, 'gateway-clock'),
  APPOINTMENTS_CLOCK_FILE: path.join(logDir, 'appointments-clock'),
})

/** Moves comms' clock (COMMS_CLOCK_FILE) to `offsetMs` from real time: reminders due by then go out. */
export function moveClock(info: StackInfo, offsetMs: number) {
  writeFileSync(info.env.COMMS_CLOCK_FILE!, String(Math.round(offsetMs)))
}

/** Moves the gateway's clock (GATEWAY_CLOCK_FILE: retention of exports) to `offsetMs` from real time. */
export function moveGatewayClock(info: StackInfo, offsetMs: number) {
  writeFileSync(info.env.GATEWAY_CLOCK_FILE!, String(Math.round(offsetMs)))
}

/** Moves the appointments clock (APPOINTMENTS_CLOCK_FILE: holds, waitlist offers) to `offsetMs` from real time. */
export function moveAppointmentsClock(info: StackInfo, offsetMs: number) {
  writeFileSync(info.env.APPOINTMENTS_CLOCK_FILE!, String(Math.round(offsetMs)))
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
  const { databaseUrl, amqpUrl, containers, logDir } = info.cleanup
  if (logDir) rmSync(logDir, { recursive: true, force: true })
  // The stack's containers take its database, vhost and users with them.
  if (containers?.length) return removeContainers(containers)
  const access = { container: info.brokerContainer }
  if (databaseUrl) await dropTestDatabase(databaseUrl)
  // Roles are cluster-wide: they outlive the database, so they go after it.
  if (databaseUrl && info.env.DB_ROLE_PREFIX) await removeDbRoles(databaseUrl, info.env.DB_ROLE_PREFIX)
  if (amqpUrl) await deleteTestVhost(amqpUrl, access)
  await removeStackBrokerUsers(info.env, access)
}

/** Whether `child` (still running) holds the listening socket of 127.0.0.1:`port` (Linux /proc). */
function listensOn(child: ChildProcess, port: number): boolean {
  if (child.exitCode !== null || child.signalCode !== null) return false
  if (process.platform !== 'linux') return true
  const hex = port.toString(16).toUpperCase().padStart(4, '0')
  const inodes = new Set(
    ['/proc/net/tcp', '/proc/net/tcp6'].flatMap((f) =>
      (existsSync(f) ? readFileSync(f, 'utf8') : '')
        .split('\n')
        .map((l) => l.trim().split(/\s+/))
        // local_address is ADDR:PORT, st 0A is LISTEN, the inode is the tenth column.
        .filter((c) => c[1]?.endsWith(`:${hex}`) && c[3] === '0A')
        .map((c) => `socket:[${c[9]}]`),
    ),
  )
  try {
    return readdirSync(`/proc/${child.pid}/fd`).some((fd) => {
      try {
        return inodes.has(readlinkSync(`/proc/${child.pid}/fd/${fd}`))
      } catch {
        return false
      }
    })
  } catch {
    return false
  }
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
