import http from 'node:http'
import type { AddressInfo } from 'node:net'
import {
  Amqp,
  createDb,
  createLogger,
  makeEvent,
  migrate,
  type CloudEvent,
  type Principal,
} from '@clinic/platform'
import {
  createTestDatabase,
  dropTestDatabase,
  injectAs,
  testAssertionKeys,
  testPrincipal,
} from '@clinic/platform/testing'
import { Webhook } from 'standardwebhooks'
import { buildApp } from '../src/app'
import { APP_ROLE, SCHEMA, migrations } from '../src/db/migrations'
import { storeEvents } from '../src/db/repositories/feed-repository'
import { jobRepository } from '../src/db/repositories/worker-repository'
import type { AddressPolicy } from '../src/delivery/address-policy'
import { Notifications } from '../src/delivery/notifications'
import { DeliveryWorker } from '../src/delivery/worker'
import { SecretBox } from '../src/domain/secrets'

export const SCHEDULE_MS = [5, 300, 1800, 7200, 18000, 36000, 36000].map((s) => s * 1000)

/** A request a receiver got, verified with the Standard Webhooks reference library. */
export interface Received {
  id: string
  timestamp: string
  signature: string
  body: string
  payload: { type: string; timestamp: string; data: Record<string, unknown> }
}

/**
 * A webhook receiver on loopback. `answer` decides each status (default 200); `verifyWith` lists
 * the secrets a delivery must verify with (standardwebhooks), else it answers 400 and counts it.
 */
export async function startReceiver() {
  const received: Received[] = []
  const rejected: string[] = []
  let secrets: string[] = []
  let answer: (n: number) => number | 'hang' = () => 200
  let inFlight = 0
  let maxInFlight = 0
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8')
      const headers = req.headers as Record<string, string>
      try {
        for (const s of secrets) new Webhook(s).verify(body, headers)
      } catch (err) {
        rejected.push((err as Error).message)
        res.writeHead(400).end()
        return
      }
      const n = received.push({
        id: headers['webhook-id'] as string,
        timestamp: headers['webhook-timestamp'] as string,
        signature: headers['webhook-signature'] as string,
        body,
        payload: JSON.parse(body) as Received['payload'],
      })
      const status = answer(n)
      if (status === 'hang') {
        inFlight++
        maxInFlight = Math.max(maxInFlight, inFlight)
        res.on('close', () => inFlight--)
        return
      }
      res.writeHead(status).end('ok')
    })
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    received,
    rejected,
    get maxInFlight() {
      return maxInFlight
    },
    verifyWith: (s: string[]) => (secrets = s),
    answer: (fn: (n: number) => number | 'hang') => (answer = fn),
    close: () => {
      server.closeAllConnections()
      return new Promise<void>((r) => server.close(() => r()))
    },
  }
}
export type Receiver = Awaited<ReturnType<typeof startReceiver>>

/**
 * The webhooks app and delivery worker on a database of their own (the worker claims every
 * company's deliveries), with a clock the test moves and a resolver it controls.
 */
export async function startWebhooks(
  o: {
    limits?: { connectMs: number; totalMs: number; maxReadBytes: number }
    /** Where the service logs, at info (default: nowhere, or LOG_LEVEL to stdout). */
    logTo?: { write(line: string): void }
  } = {},
) {
  const url = await createTestDatabase()
  await migrate(url, SCHEMA, migrations)
  const logger = o.logTo
    ? createLogger({ service: 'webhooks', level: 'info', destination: o.logTo })
    : createLogger({ service: 'webhooks', level: process.env.LOG_LEVEL ?? 'silent' })
  const knex = createDb(url, { schema: SCHEMA, role: APP_ROLE, poolMax: 10 })
  const owner = createDb(url, { schema: SCHEMA, poolMax: 2 })
  let now = new Date()
  const clock = () => now
  const dns = new Map<string, string[]>()
  const policy: AddressPolicy = {
    allowInsecure: true,
    resolve: async (host) => {
      const found = dns.get(host)
      if (!found) throw new Error(`ENOTFOUND ${host}`)
      return found
    },
  }
  const box = new SecretBox('test-webhooks-secret-key-0123456789abcdef')
  const notifications = new Notifications({ databaseUrl: url, log: logger })
  await notifications.start()
  const app = await buildApp({
    logger,
    knex,
    amqp: new Amqp({ url: process.env.AMQP_URL!, log: logger, name: 'webhooks-test' }),
    version: '261126.01',
    assertionKeys: testAssertionKeys(),
    serviceSigner: null,
    box,
    policy,
    clock,
    feedChanged: (c, ms, s) => notifications.changed(c, ms, s),
  })
  await app.ready()
  const worker = new DeliveryWorker({
    jobs: jobRepository(knex),
    log: logger,
    box,
    policy,
    clock,
    concurrency: 16,
    perEndpoint: 4,
    retrySchedule: SCHEDULE_MS,
    pollMs: 100,
    limits: o.limits,
  }).start()
  notifications.onDue(() => worker.wake())
  return {
    app,
    knex,
    owner,
    policy,
    dns,
    worker,
    as: (p: Principal) => injectAs(app, p),
    /** Moves the test clock by `ms` and lets the worker look. */
    advance(ms: number) {
      now = new Date(now.getTime() + ms)
      worker.wake()
    },
    now: () => now,
    /** Stores domain events as the consumer does (thin data, feed, deliveries). */
    publish: (events: CloudEvent[]) => knex.transaction((trx) => storeEvents(trx, events, now)),
    async close() {
      await app.close()
      await worker.stop()
      await notifications.stop()
      await Promise.all([knex.destroy(), owner.destroy()])
      await dropTestDatabase(url)
    },
  }
}
export type Webhooks = Awaited<ReturnType<typeof startWebhooks>>

/** An appointment.created event of company `companyId` at `codalmacen`. */
export function appointmentCreated(companyId: number, codalmacen = 'ALM1', id = crypto.randomUUID()) {
  return makeEvent({
    type: 'appointment.created',
    source: 'clinic/appointments',
    subject: id,
    companyId,
    codalmacen,
    data: {
      id,
      patient_id: crypto.randomUUID(),
      codalmacen,
      practitioner: 'dr-x',
      starts_at: '2026-12-01T09:00:00.000Z',
      ends_at: '2026-12-01T09:30:00.000Z',
      time_zone: 'Europe/Madrid',
      status: 'scheduled',
      checked_in_at: null,
      version: 1,
    },
  })
}

export const principal = (o: Partial<Principal> = {}) => testPrincipal(o)
