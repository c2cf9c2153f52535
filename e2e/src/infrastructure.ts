import { execFile } from 'node:child_process'
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'
import {
  TEST_DEFAULTS,
  createTestDatabase,
  createTestVhost,
  dockerEngineAnswers,
  newDbRolePrefix,
} from '@clinic/platform/testing'
import { stackBrokerUsers } from './broker'

/**
 * The PostgreSQL and RabbitMQ of the e2e stacks: containers through Testcontainers when a Docker
 * engine answers, else the machine's. Each stack makes a database, a vhost and broker users of its
 * own on them (stack.ts).
 */
const exec = promisify(execFile)
const ROOT = path.resolve(__dirname, '../..')

/** True when a Docker engine answers (then PostgreSQL and RabbitMQ run in Testcontainers). */
export function dockerAvailable(): boolean {
  return process.env.E2E_USE_DOCKER !== '0' && dockerEngineAnswers()
}

/** The PostgreSQL and RabbitMQ stacks make their databases and vhosts on. */
export interface Infrastructure {
  /** A superuser's URL of the server (database `postgres`). */
  databaseUrl: string
  /** An administrator's URL of the broker (vhost `/`). */
  amqpUrl: string
  /** The broker's container, where rabbitmqctl runs (`docker exec`); absent on the machine's broker. */
  brokerContainer?: string
  /** The containers started for it: removing them removes everything the stacks made there. */
  containers: string[]
}

/**
 * Set by the e2e global setup: the run's containers, shared by every stack of the run (its own,
 * and those the suites start beside it), each in a database, vhost and broker users of its own.
 */
export const SHARED_INFRASTRUCTURE = 'E2E_INFRASTRUCTURE'

interface ContainerImages {
  POSTGRES_IMAGE: string
  RABBITMQ_IMAGE: string
  sources: Record<string, string>
}
let images: Promise<ContainerImages> | undefined

/**
 * The images deploy/images/images.mjs chooses, once per process: the pinned images, or their
 * stand-ins built from Debian packages where no registry answers. It is ESM, which Jest's CommonJS
 * cannot load on Node 20: its command line runs, as the Compose suite runs it; what it prints goes
 * to stderr.
 */
function containerImages(): Promise<ContainerImages> {
  images ??= (async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'clinic-images-'))
    try {
      const file = path.join(dir, 'images.json')
      const { stdout } = await exec(
        process.execPath,
        [path.join(ROOT, 'deploy', 'images', 'images.mjs'), '--json', file],
        { maxBuffer: 16 * 1024 * 1024 },
      )
      process.stderr.write(`${stdout.trimEnd().replace(/^/gm, 'e2e: ')}\n`)
      return JSON.parse(await readFile(file, 'utf8')) as ContainerImages
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
  })()
  return images
}

/** Removes containers (a container already gone is no error). */
export async function removeContainers(ids: readonly string[]) {
  if (ids.length) await exec('docker', ['rm', '-f', '-v', ...ids]).catch(() => undefined)
}

/**
 * PostgreSQL and RabbitMQ in containers, through Testcontainers, on the images of resolveImages().
 * On Linux, with the engine on this machine, the services reach them at their bridge addresses:
 * published ports go through docker-proxy, one userland copy per connection, where iptables is off.
 */
async function startContainers(): Promise<Infrastructure> {
  const { POSTGRES_IMAGE, RABBITMQ_IMAGE, sources } = await containerImages()
  // Ryuk, Testcontainers' reaper, is an image no registry here serves: whoever starts containers
  // removes them (stopStack, the global teardown).
  process.env.TESTCONTAINERS_RYUK_DISABLED = 'true'
  const { GenericContainer, Wait } = await import('testcontainers')
  const started = await Promise.allSettled([
    new GenericContainer(POSTGRES_IMAGE)
      .withEnvironment({ POSTGRES_HOST_AUTH_METHOD: 'trust' })
      .withExposedPorts(5432)
      // Twice: once for the server that makes the database, once for the one that stays.
      .withWaitStrategy(Wait.forLogMessage(/database system is ready to accept connections/, 2))
      .withStartupTimeout(180_000)
      .start(),
    new GenericContainer(RABBITMQ_IMAGE)
      .withExposedPorts(5672)
      .withWaitStrategy(Wait.forLogMessage(/Server startup complete/))
      .withStartupTimeout(180_000)
      .start(),
  ])
  const [pg, mq] = started.map((r) => (r.status === 'fulfilled' ? r.value : undefined))
  if (!pg || !mq) {
    await removeContainers([pg, mq].flatMap((c) => (c ? [c.getId()] : [])))
    const failed = started.find((r) => r.status === 'rejected') as PromiseRejectedResult
    throw failed.reason
  }
  const direct = process.platform === 'linux' && !/^(tcp|ssh|npipe):/.test(process.env.DOCKER_HOST ?? '')
  const address = (c: typeof pg, port: number) =>
    direct ? `${c.getIpAddress(c.getNetworkNames()[0]!)}:${port}` : `${c.getHost()}:${c.getMappedPort(port)}`
  const infra: Infrastructure = {
    databaseUrl: `postgres://postgres@${address(pg, 5432)}/postgres`,
    amqpUrl: `amqp://guest:guest@${address(mq, 5672)}`,
    brokerContainer: mq.getId(),
    containers: [pg.getId(), mq.getId()],
  }
  process.stderr.write(
    `e2e: PostgreSQL and RabbitMQ in containers (Testcontainers): ${POSTGRES_IMAGE} (${sources.POSTGRES_IMAGE}), ` +
      `${RABBITMQ_IMAGE} (${sources.RABBITMQ_IMAGE}), reached ${direct ? 'at their bridge addresses' : 'through published ports'} ` +
      `(${new URL(infra.databaseUrl).host}, ${new URL(infra.amqpUrl).host})\n`,
  )
  return infra
}

/**
 * Containers when a Docker engine answers (E2E_USE_DOCKER=0 says no), else the machine's
 * PostgreSQL and RabbitMQ (E2E_DATABASE_URL, E2E_AMQP_URL, else the test defaults).
 */
export async function startInfrastructure(): Promise<Infrastructure> {
  if (dockerAvailable()) return startContainers()
  // Under CI the suite runs against containers (DESIGN.md section 18), never quietly on the host's.
  if (process.env.CI === 'true' && process.env.E2E_USE_DOCKER !== '0')
    throw new Error('e2e: CI=true and no Docker engine answers: the containers cannot run')
  process.stderr.write(
    `e2e: ${process.env.E2E_USE_DOCKER === '0' ? 'E2E_USE_DOCKER=0' : 'no Docker engine'}: the machine's PostgreSQL and RabbitMQ\n`,
  )
  return {
    databaseUrl: process.env.E2E_DATABASE_URL ?? process.env.TEST_DATABASE_URL ?? TEST_DEFAULTS.DATABASE_URL,
    amqpUrl: process.env.E2E_AMQP_URL ?? process.env.TEST_AMQP_URL ?? TEST_DEFAULTS.AMQP_URL,
    containers: [],
  }
}

/** Makes `infra` the one every stack of this run (this process and the suites' workers) starts on. */
export function shareInfrastructure(infra: Infrastructure) {
  process.env[SHARED_INFRASTRUCTURE] = JSON.stringify({ ...infra, containers: [] })
}

/**
 * A stack's own place on `infra`: a database, a vhost, broker users (one a service; the variables
 * service-env.cjs makes their AMQP URLs of) and the prefix of its database roles (DB_ROLE_PREFIX:
 * roles are cluster-wide, and the stacks of a run share one PostgreSQL; the services' migration
 * steps make the roles, stopStack drops them).
 */
export async function stackPlaceOn(infra: Infrastructure) {
  const access = { container: infra.brokerContainer }
  const [databaseUrl, amqpUrl] = await Promise.all([
    createTestDatabase(infra.databaseUrl),
    createTestVhost(infra.amqpUrl, access),
  ])
  return {
    databaseUrl,
    amqpUrl,
    brokerEnv: await stackBrokerUsers(amqpUrl, access),
    dbRolePrefix: newDbRolePrefix(),
  }
}
