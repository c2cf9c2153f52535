import http from 'node:http'
import type { AddressInfo } from 'node:net'
import {
  Amqp,
  OutboxRelay,
  createDb,
  createLogger,
  migrate,
  verifyAssertion,
  ASSERTION_HEADER,
  type Principal,
} from '@clinic/platform'
import {
  createTestDatabase,
  createTestVhost,
  deleteTestVhost,
  dropTestDatabase,
  gatewayHeaders,
  testAssertionKeys,
  testPrincipal,
  testServices,
  testSigner,
} from '@clinic/platform/testing'
import type { Knex } from 'knex'
import { SMTPServer } from 'smtp-server'
import { buildApp } from '../src/app'
import { loadCommsConfig, messagingLimits } from '../src/config'
import type { Clock } from '../src/clock'
import { APP_ROLE, SCHEMA, migrations } from '../src/db/migrations'
import type { AppointmentInfo, OfferInfo } from '../src/domain/directories'
import type { Provider } from '../src/domain/deliver-message'
import type { MessagingLimits } from '../src/domain/queue-message'
import type { InboundMessageTimes } from '../src/domain/sms-keywords'
import type { PatientContact } from '../src/domain/directories'
import { unsubscribeUrlFor } from '../src/links/unsubscribe-link'
import type { Channel } from '../src/schemas/message'
import { DeliveryRepository } from '../src/db/repositories/delivery-repository'
import { DELIVERY_CHANNEL } from '../src/db/migrations/delivery-jobs'
import { DeliveryWorker } from '../src/worker'

export type App = Awaited<ReturnType<typeof buildApp>>

/** COMMS_LINK_SECRET of the tests (obviously fake, 32+ characters). */
export const TEST_LINK_SECRET = 'test-comms-link-secret-0123456789abcdef0123'
/** PUBLIC_BASE_URL of the tests: links (patient, unsubscribe) point there. */
export const TEST_PUBLIC_BASE_URL = 'http://127.0.0.1:8080'

/**
 * The comms configuration of a test: the run's secrets, COMMS_DELIVERY=files (no SMTP or Twilio),
 * every other variable at its default unless `env` sets it.
 */
export function testConfig(env: Record<string, string> = {}) {
  return loadCommsConfig({
    GATEWAY_VERIFY_KEY: process.env.GATEWAY_VERIFY_KEY,
    SERVICE_SIGNING_KEY: process.env.COMMS_SERVICE_SIGNING_KEY,
    // Its own broker user, as every stack runs it (the consumer expects the others after its prefix).
    AMQP_URL: 'amqp://clinic-comms:test@127.0.0.1:5672',
    COMMS_LINK_SECRET: TEST_LINK_SECRET,
    COMMS_DELIVERY: 'files',
    ...env,
  })
}

/**
 * Stands in for the patients and appointments services' internal endpoints: a real HTTP server
 * that checks the signed assertion of each call (company, method, path) like the real ones, and
 * answers only for the company the record belongs to.
 */
export async function startDirectory() {
  const patients = new Map<string, PatientContact>()
  const appointments = new Map<string, AppointmentInfo>()
  let calls = 0
  let down = false
  /** Patients' answers (POST /internal/appointments/:id/respond): who asked, and how long they take. */
  const responses: Array<{ companyId: number; username: string; id: string; action: string }> = []
  let respondDelayMs = 0
  const offers = new Map<string, OfferInfo>()
  /** Patients' answers to waitlist offers (POST /internal/appointments/waitlist-offers/:id/answer). */
  const offerAnswers: Array<{ companyId: number; username: string; id: string; action: string }> = []
  // As the real services: comms' own key only (their internal routes name comms as a caller).
  const farEndKeys = testAssertionKeys(['comms'])
  const server = http.createServer(async (req, res) => {
    calls++
    if (down) {
      req.socket.destroy()
      return
    }
    const url = new URL(req.url ?? '/', 'http://x')
    const claims = await verifyAssertion(req.headers[ASSERTION_HEADER] as string | undefined, farEndKeys, {
      method: req.method ?? '',
      path: url.pathname,
    })
    if (!claims.ok || claims.claims.iss !== 'comms') {
      res.writeHead(401).end()
      return
    }
    const respond = /^\/internal\/appointments\/([^/]+)\/respond$/.exec(url.pathname)
    if (respond && req.method === 'POST') {
      let body = ''
      for await (const chunk of req) body += chunk
      const { action } = JSON.parse(body) as { action: string }
      const { companyId, username } = claims.claims
      responses.push({ companyId, username, id: respond[1]!, action })
      await new Promise((r) => setTimeout(r, respondDelayMs))
      const answer = answerOf(appointments, `${companyId}:${respond[1]}`, action)
      res.writeHead(answer.status, { 'content-type': 'application/json' }).end(JSON.stringify(answer.body))
      return
    }
    const offer = /^\/internal\/appointments\/waitlist-offers\/([^/]+)(\/answer)?$/.exec(url.pathname)
    if (offer) {
      const { companyId, username } = claims.claims
      const key = `${companyId}:${offer[1]}`
      if (offer[2] && req.method === 'POST') {
        let body = ''
        for await (const chunk of req) body += chunk
        const { action } = JSON.parse(body) as { action: string }
        offerAnswers.push({ companyId, username, id: offer[1]!, action })
        const current = offers.get(key)
        if (current) offers.set(key, answerOffer(current, action))
      }
      const found = offers.get(key)
      if (!found) {
        res.writeHead(404, { 'content-type': 'application/problem+json' }).end('{"code":"not_found"}')
        return
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(found))
      return
    }
    const m = /^\/internal\/(patients|appointments)\/([^/]+)$/.exec(url.pathname)
    const key = m ? `${claims.claims.companyId}:${m[2]}` : ''
    const found = m?.[1] === 'patients' ? patients.get(key) : appointments.get(key)
    if (!found) {
      res.writeHead(404, { 'content-type': 'application/problem+json' }).end('{"code":"not_found"}')
      return
    }
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(found))
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  return {
    url,
    get calls() {
      return calls
    },
    /** Drop every call (as a crashed service would) until set back. */
    setDown: (v: boolean) => (down = v),
    responses,
    setRespondDelay: (ms: number) => (respondDelayMs = ms),
    addPatient: (companyId: number, p: PatientContact) => patients.set(`${companyId}:${p.id}`, p),
    addAppointment: (companyId: number, a: AppointmentInfo) => appointments.set(`${companyId}:${a.id}`, a),
    offerAnswers,
    /** A waitlist offer of `companyId` (set again to change its state, as the staff would). */
    addOffer: (companyId: number, o: OfferInfo) => offers.set(`${companyId}:${o.id}`, o),
    close: () => new Promise<void>((r) => server.close(() => r())),
  }
}
export type Directory = Awaited<ReturnType<typeof startDirectory>>

/** The appointments service's state machine for a patient's answer, in short (it changes the record). */
function answerOf(appointments: Map<string, AppointmentInfo>, key: string, action: string) {
  const a = appointments.get(key)
  if (!a) return { status: 404, body: { code: 'not_found' } }
  const to = action === 'confirm' ? 'confirmed' : 'cancelled'
  if (a.status === to && to === 'confirmed') return { status: 200, body: a }
  if (a.status !== 'scheduled' && !(a.status === 'confirmed' && to === 'cancelled'))
    return { status: 409, body: { code: 'invalid_transition' } }
  const changed = { ...a, status: to, version: a.version + 1 }
  appointments.set(key, changed)
  return { status: 200, body: changed }
}

/** The appointments service's answer to an offer, in short: only an open offer changes. */
function answerOffer(o: OfferInfo, action: string): OfferInfo {
  if (o.state !== 'open') return o
  if (action === 'decline') return { ...o, state: 'declined' }
  return { ...o, state: 'accepted', appointment_id: '0190c5a0-0000-7000-8000-00000000a000' }
}

export interface Harness {
  app: App
  knex: Knex
  owner: Knex
  amqp: Amqp
  /** The broker the harness publishes to: with `providers`, a vhost of its own. */
  amqpUrl: string
  directory: Directory
  /** With `providers`: the delivery worker (wake() to look for due messages now). */
  worker: DeliveryWorker | null
  /** The delivery worker's clock (the system clock until moved). */
  deliveryClock: Clock
  /** With `providers`: moves the delivery worker's clock forward, so retries fall due without waiting. */
  moveDeliveryClock(ms: number): void
  close(): Promise<void>
}

/**
 * The comms app on the run's database (as the service role), with the directory server above.
 * With `providers`, also the outbox relay and the delivery worker, on a database and a vhost of
 * their own: test files run in parallel, and a relay or a worker on the run's database would take
 * another file's outbox rows and messages.
 */
export async function startComms(
  o: {
    providers?: Record<Channel, Provider>
    /** `inboundUrl`: the URL incoming SMS are signed for (config.ts twilioInboundUrl). */
    twilio?: { authToken: string; webhookUrl: string; inboundUrl?: string; times?: InboundMessageTimes }
    /** Every log line of the app and the worker, at every level (silent without). */
    logLines?: string[]
    /** Messaging limits over the configuration's defaults (DESIGN.md section 12). */
    limits?: Partial<MessagingLimits>
    /** What time it is for patient links (a movable clock); default the system clock. */
    clock?: Clock
    /** Services whose signed calls it takes besides the gateway's (its internal routes' callers). */
    callers?: string[]
  } = {},
): Promise<Harness> {
  // A relay publishes and deletes every company's outbox rows: with one (`providers`), a database
  // of its own, so the files that read the outbox of the run's database never race it.
  const url = o.providers ? await createTestDatabase() : process.env.DATABASE_URL!
  const amqpUrl = o.providers ? await createTestVhost() : process.env.AMQP_URL!
  await migrate(url, SCHEMA, migrations)
  const lines = o.logLines
  const logger = lines
    ? createLogger({
        service: 'comms',
        level: 'trace',
        destination: { write: (line) => void lines.push(line) },
      })
    : createLogger({ service: 'comms', level: process.env.LOG_LEVEL ?? 'silent' })
  const knex = createDb(url, { schema: SCHEMA, role: APP_ROLE, poolMax: 10 })
  const owner = createDb(url, { schema: SCHEMA, poolMax: 2 })
  const amqp = new Amqp({ url: amqpUrl, log: logger, name: 'comms-test' })
  const directory = await startDirectory()
  const app = await buildApp({
    logger,
    knex,
    amqp,
    version: '261122.01',
    assertionKeys: testAssertionKeys(o.callers),
    serviceSigner: testSigner('comms'),
    services: testServices('comms', directory.url),
    limits: { ...messagingLimits(testConfig()), ...o.limits },
    twilio: o.twilio,
    links: { baseUrl: 'http://127.0.0.1:8080', secret: TEST_LINK_SECRET },
    clock: o.clock,
  })
  await app.ready()
  let worker: DeliveryWorker | null = null
  let relay: OutboxRelay | null = null
  let offset = 0
  const deliveryClock = () => new Date(Date.now() + offset)
  if (o.providers) {
    await amqp.start()
    worker = new DeliveryWorker({
      store: new DeliveryRepository(knex),
      log: logger,
      providers: o.providers,
      clock: deliveryClock,
      maxAttempts: 3,
      // Longer than any test waits: a retry falls due when the test moves the clock (moveDeliveryClock).
      retryBaseMs: 60_000,
      staleMinutes: 10,
      concurrency: 4,
      listen: { databaseUrl: url, channel: DELIVERY_CHANNEL },
      unsubscribeUrl: unsubscribeUrlFor(TEST_LINK_SECRET, TEST_PUBLIC_BASE_URL),
    }).start()
    relay = new OutboxRelay({ knex, schema: SCHEMA, databaseUrl: url, amqp, log: logger, pollMs: 200 })
    await relay.start()
  }
  return {
    app,
    knex,
    owner,
    amqp,
    amqpUrl,
    directory,
    worker,
    deliveryClock,
    moveDeliveryClock(ms) {
      offset += ms
      worker?.wake()
    },
    async close() {
      await app.close()
      await relay?.stop()
      await worker?.stop()
      await amqp.close()
      await directory.close()
      await Promise.all([knex.destroy(), owner.destroy()])
      if (o.providers) await Promise.all([dropTestDatabase(url), deleteTestVhost(amqpUrl)])
    },
  }
}

/** Calls the app as the gateway would on behalf of `principal`. */
export function clientFor(app: App, principal: Principal = testPrincipal()) {
  const call = async (
    method: 'GET' | 'POST' | 'PUT',
    url: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ) =>
    app.inject({
      method,
      url,
      headers: { ...(await gatewayHeaders(principal, method, url, undefined, undefined, body)), ...headers },
      ...(body === undefined ? {} : { payload: body as Record<string, unknown> }),
    })
  return {
    principal,
    get: (url: string) => call('GET', url),
    post: (url: string, body: unknown, headers?: Record<string, string>) => call('POST', url, body, headers),
    put: (url: string, body: unknown, headers?: Record<string, string>) => call('PUT', url, body, headers),
  }
}
export type Client = ReturnType<typeof clientFor>

/**
 * A real SMTP server (smtp-server) on a free port. Recipients decide its answer: `tempfail*@`
 * gets 451 on its first RCPT and is accepted after; `reject*@` always gets 550; others are accepted.
 */
export async function startSmtp() {
  const received: Array<{ to: string[]; raw: string }> = []
  const tempfailed = new Set<string>()
  let rcptCalls = 0
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS', 'AUTH'],
    logger: false,
    onRcptTo(address, _session, cb) {
      rcptCalls++
      const local = address.address.split('@')[0] ?? ''
      if (local.startsWith('reject'))
        return cb(Object.assign(new Error('Mailbox unavailable'), { responseCode: 550 }))
      if (local.startsWith('tempfail') && !tempfailed.has(address.address)) {
        tempfailed.add(address.address)
        return cb(Object.assign(new Error('Try again later'), { responseCode: 451 }))
      }
      cb()
    },
    onData(stream, session, cb) {
      const chunks: Buffer[] = []
      stream.on('data', (c: Buffer) => chunks.push(c))
      stream.on('end', () => {
        received.push({
          to: session.envelope.rcptTo.map((r) => r.address),
          raw: Buffer.concat(chunks).toString('utf8'),
        })
        cb()
      })
    },
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()))
  const port = (server.server.address() as AddressInfo).port
  return {
    url: `smtp://127.0.0.1:${port}`,
    received,
    get rcptCalls() {
      return rcptCalls
    },
    /** Emails that carried this message id. */
    copiesOf: (messageId: string) =>
      received.filter((m) => /^x-clinic-message-id: *(.*)$/im.exec(m.raw)?.[1]?.trim() === messageId).length,
    close: () => new Promise<void>((r) => server.close(() => r())),
  }
}

/**
 * The part of Twilio's REST API the client uses to send (POST .../Messages.json), on a free port.
 * `To` decides the answer: +34600000400 is a 400 (invalid number), +34600000503 a 503 once.
 * Messages that came in (`incoming`: a sid and when Twilio took it) are read back by sid
 * (GET .../Messages/<sid>.json), as comms dates inbound keywords; any other sid is a 404.
 */
export async function startTwilio(accountSid: string, authToken: string) {
  const sent: Array<Record<string, string>> = []
  const incoming = new Map<string, Date>()
  let failedOnce = false
  let n = 0
  const server = http.createServer((req, res) => {
    let body = ''
    req.on('data', (c) => (body += c))
    req.on('end', () => {
      const auth = Buffer.from(`${accountSid}:${authToken}`).toString('base64')
      const json = (status: number, o: unknown) =>
        res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(o))
      if (req.headers.authorization !== `Basic ${auth}`)
        return json(401, { code: 20003, message: 'Authenticate', status: 401 })
      const fetched = new RegExp(`^/2010-04-01/Accounts/${accountSid}/Messages/([A-Za-z0-9]+)\\.json$`).exec(
        req.url ?? '',
      )
      if (req.method === 'GET' && fetched) {
        const at = incoming.get(fetched[1]!)
        if (!at) return json(404, { code: 20404, message: 'Not found', status: 404 })
        return json(200, {
          sid: fetched[1],
          account_sid: accountSid,
          direction: 'inbound',
          status: 'received',
          date_created: at.toUTCString(),
        })
      }
      if (req.method !== 'POST' || req.url !== `/2010-04-01/Accounts/${accountSid}/Messages.json`)
        return json(404, { code: 20404, message: 'Not found', status: 404 })
      const p = Object.fromEntries(new URLSearchParams(body))
      if (p.To === '+34600000400')
        return json(400, { code: 21211, message: "The 'To' number is not valid", status: 400 })
      if (p.To === '+34600000503' && !failedOnce) {
        failedOnce = true
        return json(503, { code: 20503, message: 'Service unavailable', status: 503 })
      }
      n++
      const sid = `SM${String(n).padStart(32, '0')}`
      sent.push({ ...p, sid })
      json(201, {
        sid,
        account_sid: accountSid,
        to: p.To,
        from: p.From ?? null,
        body: p.Body,
        status: 'queued',
        num_segments: '1',
        date_created: new Date().toUTCString(),
      })
    })
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    sent,
    /** A message Twilio took at `at` (to the second, as its API says it). */
    incoming: (sid: string, at: Date) => void incoming.set(sid, at),
    close: () => new Promise<void>((r) => server.close(() => r())),
  }
}
