import { randomBytes } from 'node:crypto'
import pg from 'pg'
// The package's own CommonJS file (the Compose step and the e2e stack run it too); the same path from src and dist.
import { rabbitmqctl } from '../../broker-users.cjs'
import { DB_ROLE_PREFIX } from '../../naming.cjs'
import { declareSharedExchanges } from './broker'

export const TEST_DEFAULTS = {
  DATABASE_URL: 'postgres://postgres@127.0.0.1:5432/postgres',
  AMQP_URL: 'amqp://guest:guest@127.0.0.1:5672',
}

export const uniqueName = (prefix: string) =>
  `${prefix}_${Date.now().toString(36)}_${randomBytes(3).toString('hex')}`

function withDatabase(url: string, name: string): string {
  const u = new URL(url)
  u.pathname = `/${encodeURIComponent(name)}`
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

/** A fresh DB_ROLE_PREFIX for a test stack's database roles: `t<hex>_`. */
export const newDbRolePrefix = () => `t${randomBytes(4).toString('hex')}_`

/**
 * Drops a test stack's database roles (`<prefix>clinic_*`: its services' login roles and the NOLOGIN
 * roles their migrations grant to), once the stack's database is dropped; returns their names. A
 * role that still owns something or holds privileges in another database (a database of the stack
 * left behind, a grant made by hand) cannot be dropped while it does: in each such database what it
 * owns passes to the caller (REASSIGN OWNED) and its privileges go (DROP OWNED) first. The prefix
 * is the stack's own, so no other stack's role, grant or object is touched.
 */
export async function removeDbRoles(baseUrl: string, prefix: string): Promise<string[]> {
  if (!prefix || !DB_ROLE_PREFIX.test(prefix))
    throw new Error(`removeDbRoles: only a prefixed stack removes its roles (not ${JSON.stringify(prefix)})`)
  const admin = new pg.Client({ connectionString: withDatabase(baseUrl, 'postgres') })
  await admin.connect()
  try {
    const { rows } = await admin.query<{ rolname: string }>(
      'SELECT rolname FROM pg_roles WHERE starts_with(rolname, $1) ORDER BY rolname',
      [`${prefix}clinic_`],
    )
    const names = rows.map((r) => r.rolname)
    if (!names.length) return []
    const roles = names.map((n) => pg.escapeIdentifier(n)).join(', ')
    // pg_shdepend: what each role owns or is granted, database by database (0: shared objects).
    const { rows: databases } = await admin.query<{ datname: string }>(
      `SELECT DISTINCT coalesce(d.datname, current_database()) AS datname
         FROM pg_shdepend s LEFT JOIN pg_database d ON d.oid = s.dbid
        WHERE s.refclassid = 'pg_authid'::regclass
          AND s.refobjid IN (SELECT oid FROM pg_roles WHERE rolname = ANY($1))`,
      [names],
    )
    for (const { datname } of databases) {
      const db = new pg.Client({ connectionString: withDatabase(baseUrl, datname) })
      try {
        await db.connect()
      } catch (err) {
        if ((err as { code?: string }).code === '3D000') continue // dropped meanwhile
        throw err
      }
      try {
        await db.query(`REASSIGN OWNED BY ${roles} TO CURRENT_USER; DROP OWNED BY ${roles}`)
      } finally {
        await db.end()
      }
    }
    await admin.query(`DROP ROLE IF EXISTS ${roles}`)
    return names
  } finally {
    await admin.end()
  }
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
