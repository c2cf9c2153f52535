import net from 'node:net'
import { execFile } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { promisify } from 'node:util'
import amqplib from 'amqplib'
import pg from 'pg'
import { EXCHANGE } from '../amqp'
import { assertionHeaders, type Principal } from '../assertion'
import type { InjectOptions, LightMyRequestResponse } from 'fastify'
import type { Knex } from 'knex'
import type { CloudEvent, EventData } from '../events'

const exec = promisify(execFile)

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

/**
 * Creates a RabbitMQ vhost for one test run (rabbitmqctl, or the management API when
 * RABBITMQ_MANAGEMENT_URL is set); returns the AMQP URL for it.
 */
export async function createTestVhost(baseUrl = process.env.TEST_AMQP_URL ?? TEST_DEFAULTS.AMQP_URL) {
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
    await exec('rabbitmqctl', ['add_vhost', vhost])
    await exec('rabbitmqctl', ['set_permissions', '-p', vhost, user, '.*', '.*', '.*'])
  }
  const u = new URL(baseUrl)
  u.pathname = `/${vhost}`
  return u.toString()
}

export async function deleteTestVhost(amqpUrl: string) {
  const vhost = decodeURIComponent(new URL(amqpUrl).pathname.slice(1))
  if (!vhost.startsWith('clinic_test_')) throw new Error(`refusing to delete vhost ${vhost}`)
  const mgmt = process.env.RABBITMQ_MANAGEMENT_URL
  if (mgmt) await mgmtCall(mgmt, 'DELETE', `/api/vhosts/${vhost}`)
  else await exec('rabbitmqctl', ['delete_vhost', vhost])
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

/** Polls until `fn` returns a truthy value (or stops throwing); never a bare sleep. */
export async function waitFor<T>(
  fn: () => Promise<T> | T,
  { timeoutMs = 10_000, intervalMs = 50, what = 'condition' } = {},
): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs
  let lastErr: unknown
  for (;;) {
    try {
      const v = await fn()
      if (v) return v as NonNullable<T>
    } catch (err) {
      lastErr = err
    }
    if (Date.now() > deadline)
      throw new Error(
        `timed out after ${timeoutMs} ms waiting for ${what}${lastErr ? `: ${String(lastErr)}` : ''}`,
      )
    await new Promise((r) => setTimeout(r, intervalMs))
  }
}

let nextCompany = Math.floor(Math.random() * 1_000_000) * 100 + 1_000_000
/** A company id no other test in this run uses (tests share one database). */
export const freshCompanyId = () => nextCompany++

export function testPrincipal(overrides: Partial<Principal> = {}): Principal {
  return {
    companyId: overrides.companyId ?? freshCompanyId(),
    userId: '0190c5a0-0000-7000-8000-000000000001',
    username: 'test-user',
    tokenId: '0190c5a0-0000-7000-8000-000000000002',
    companyCenters: ['ALM1', 'ALM2'],
    allowedCenters: null,
    ...overrides,
  }
}

/**
 * Headers that make an `app.inject` call look like it came through the gateway: an assertion for
 * this method, URL (query included) and body (an object is sent as JSON.stringify, as inject does),
 * addressed to `audience` (default: the service owning the URL's path family).
 */
export function gatewayHeaders(
  principal: Principal,
  method: string,
  url: string,
  secret = process.env.INTERNAL_AUTH_SECRET ?? 'test-secret-0123456789abcdef0123456789abcdef',
  requestId = `test-${Date.now().toString(36)}`,
  body?: unknown,
  audience?: string,
): Record<string, string> {
  const sent =
    body === undefined || typeof body === 'string' || Buffer.isBuffer(body) ? body : JSON.stringify(body)
  return assertionHeaders({ auth: principal, requestId }, { method, path: url, body: sent, audience }, secret)
}

/**
 * A TCP proxy in front of a server (RabbitMQ, in the outage tests): `cut()` destroys every open
 * connection and refuses new ones until `restore()`. It cuts the clients off without stopping the
 * real broker, which other test runs on the machine share. `url` is the target URL through it.
 */
export async function tcpProxy(target: URL) {
  const sockets = new Set<net.Socket>()
  let refusing = false
  let refused = 0
  let accepted = 0
  const server = net.createServer((client) => {
    if (refusing) {
      refused++
      client.destroy()
      return
    }
    accepted++
    const upstream = net.connect(Number(target.port || 5672), target.hostname)
    sockets.add(client)
    sockets.add(upstream)
    const drop = () => {
      client.destroy()
      upstream.destroy()
      sockets.delete(client)
      sockets.delete(upstream)
    }
    client.on('error', drop).on('close', drop)
    upstream.on('error', drop).on('close', drop)
    client.pipe(upstream)
    upstream.pipe(client)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const port = (server.address() as net.AddressInfo).port
  const url = new URL(target.toString())
  url.hostname = '127.0.0.1'
  url.port = String(port)
  return {
    url: url.toString(),
    get refused() {
      return refused
    },
    get accepted() {
      return accepted
    },
    get open() {
      return sockets.size
    },
    cut() {
      refusing = true
      for (const s of sockets) s.destroy()
      sockets.clear()
    },
    restore() {
      refusing = false
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy()
        server.close(() => resolve())
      }),
  }
}

/**
 * The data of an appointment event (created, updated or checked_in: the last two share the
 * shape, the first is a subset) with obviously fake values, for envelope, consumer and audit tests.
 */
export function appointmentEventData(
  overrides: Partial<EventData<'appointment.checked_in'>> = {},
): EventData<'appointment.checked_in'> {
  return {
    id: '0190c5a0-0000-7000-8000-0000000000aa',
    patient_id: '0190c5a0-0000-7000-8000-0000000000bb',
    codalmacen: 'ALM1',
    practitioner: 'dra-ejemplo',
    starts_at: '2026-11-22T09:30:00.000Z',
    ends_at: '2026-11-22T10:00:00.000Z',
    time_zone: 'Europe/Madrid',
    status: 'checked_in',
    checked_in_at: '2026-11-22T09:25:00.000Z',
    version: 2,
    changes: ['status', 'checked_in_at'],
    old_status: 'scheduled',
    new_status: 'checked_in',
    ...overrides,
  }
}

/** An event as a service wrote it to its outbox (read as the schema owner, any company). */
export interface OutboxRow {
  type: string
  payload: Omit<CloudEvent, 'data'> & { data: Record<string, unknown> & { changes?: string[] } }
}

/** The outbox rows about one resource (`subject`) of one company, oldest first. */
export async function outboxOf(owner: Knex, companyId: number, subject: string): Promise<OutboxRow[]> {
  return owner('outbox')
    .where({ idempresa: companyId })
    .whereRaw(`payload->>'subject' = ?`, [subject])
    .orderBy('id')
    .select('type', 'payload')
}

/** The part of a Fastify app a test calls. */
interface Injectable {
  inject(o: InjectOptions): Promise<LightMyRequestResponse>
}

/** `app.inject` as the gateway would call the service on behalf of `principal`. */
export function injectAs(app: Injectable, principal: Principal) {
  return (
    method: 'GET' | 'POST' | 'PATCH',
    url: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ) =>
    app.inject({
      method,
      url,
      headers: { ...gatewayHeaders(principal, method, url, undefined, undefined, body), ...headers },
      ...(body === undefined ? {} : { payload: body as Record<string, unknown> }),
    })
}

/**
 * Every event published on `clinic.events` with `routingKey` (a topic pattern) from now on, in
 * arrival order: what a service really got out, whatever its outbox keeps.
 */
export async function tapEvents(amqpUrl: string, routingKey = '#') {
  const conn = await amqplib.connect(amqpUrl)
  const ch = await conn.createChannel()
  await ch.assertExchange(EXCHANGE, 'topic', { durable: true })
  const { queue } = await ch.assertQueue('', { exclusive: true, autoDelete: true })
  await ch.bindQueue(queue, EXCHANGE, routingKey)
  const messages: Array<{ event: CloudEvent; msg: import('amqplib').ConsumeMessage }> = []
  await ch.consume(
    queue,
    (msg) => {
      if (!msg) return
      try {
        messages.push({ event: JSON.parse(msg.content.toString('utf8')) as CloudEvent, msg })
      } catch {
        // Not JSON (another test's poison message on the shared vhost): not an event.
      }
    },
    { noAck: true },
  )
  return {
    messages,
    /** Ids received for one company, with repeats. */
    idsFor: (companyId: number) =>
      messages.filter((m) => m.event.idempresa === companyId).map((m) => m.event.id),
    /** The events about one resource (CloudEvents `subject`), in arrival order. */
    about: (subject: string) => messages.filter((m) => m.event.subject === subject).map((m) => m.event),
    close: async () => {
      await conn.close().catch(() => undefined)
    },
  }
}
export * from './fake-store'
