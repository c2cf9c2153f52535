import { randomBytes } from 'node:crypto'
import pg from 'pg'
// The package's own CommonJS file (the Compose step and the e2e stack run it too); the same path from src and dist.
import { rabbitmqctl } from '../../broker-users.cjs'
import { declareSharedExchanges } from './broker'

export const TEST_DEFAULTS = {
  DATABASE_URL: 'postgres://postgres@127.0.0.1:5432/postgres',
  AMQP_URL: 'amqp://guest:guest@127.0.0.1:5672',
}

export const uniqueName = (prefix: string) =>
  `${prefix}_${Date.now().toString(36)}_${randomBytes(3).toString('hex')}`

function withDatabase(url: string, name: string): string {
  const u = new URL(url)
  u.pathname = `/${name}`
  return u.toString()
}

async function adminQuery(baseUrl: string, sql: string) {
  const client = new pg.Client({ connectionString: withDatabase(baseUrl, 'postgres') })
  await client.connect()
  try {
    await client.query(sql)
  } finally {
    await client.end()
  }
}

/** Creates an empty database for one test run; returns its URL. */
export async function createTestDatabase(
  baseUrl = process.env.TEST_DATABASE_URL ?? TEST_DEFAULTS.DATABASE_URL,
) {
  const name = uniqueName('clinic_test')
  await adminQuery(baseUrl, `CREATE DATABASE ${name}`)
  return withDatabase(baseUrl, name)
}

export async function dropTestDatabase(url: string) {
  const name = new URL(url).pathname.slice(1)
  if (!/^clinic_test_[a-z0-9_]+$/.test(name)) throw new Error(`refusing to drop ${name}`)
  await adminQuery(url, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
}

/** Where rabbitmqctl runs: on this machine, or in the broker's container (`docker exec`). */
export interface BrokerAccess {
  container?: string
}

/**
 * Creates a RabbitMQ vhost for one test run (rabbitmqctl, here or in the broker's container, or
 * the management API when RABBITMQ_MANAGEMENT_URL is set), with the two shared exchanges (services
 * declare nothing; a test declares the work queues it consumes, `declareWorkQueue`); returns the
 * AMQP URL for it.
 */
export async function createTestVhost(
  baseUrl = process.env.TEST_AMQP_URL ?? TEST_DEFAULTS.AMQP_URL,
  access: BrokerAccess = {},
) {
  const vhost = uniqueName('clinic_test')
  const user = decodeURIComponent(new URL(baseUrl).username || 'guest')
  const mgmt = process.env.RABBITMQ_MANAGEMENT_URL
  if (mgmt) {
    await mgmtCall(mgmt, 'PUT', `/api/vhosts/${vhost}`, {})
    await mgmtCall(mgmt, 'PUT', `/api/permissions/${vhost}/${user}`, {
      configure: '.*',
      write: '.*',
      read: '.*',
    })
  } else {
    await rabbitmqctl(['add_vhost', vhost], access)
    await rabbitmqctl(['set_permissions', '-p', vhost, user, '.*', '.*', '.*'], access)
  }
  const u = new URL(baseUrl)
  u.pathname = `/${vhost}`
  await declareSharedExchanges(u.toString())
  return u.toString()
}

export async function deleteTestVhost(amqpUrl: string, access: BrokerAccess = {}) {
  const vhost = decodeURIComponent(new URL(amqpUrl).pathname.slice(1))
  if (!vhost.startsWith('clinic_test_')) throw new Error(`refusing to delete vhost ${vhost}`)
  const mgmt = process.env.RABBITMQ_MANAGEMENT_URL
  if (mgmt) await mgmtCall(mgmt, 'DELETE', `/api/vhosts/${vhost}`)
  else await rabbitmqctl(['delete_vhost', vhost], access)
}

async function mgmtCall(base: string, method: string, path: string, body?: unknown) {
  const u = new URL(base)
  const auth = Buffer.from(`${decodeURIComponent(u.username)}:${decodeURIComponent(u.password)}`).toString(
    'base64',
  )
  u.username = ''
  u.password = ''
  const res = await fetch(new URL(path, u), {
    method,
    headers: { authorization: `Basic ${auth}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  })
  if (!res.ok) throw new Error(`RabbitMQ management ${method} ${path}: ${res.status}`)
}
