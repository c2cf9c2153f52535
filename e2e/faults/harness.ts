import { type ChildProcess } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import pg from 'pg'
import { rabbitmqctl } from '@clinic/platform/broker-users'
import { tcpProxy, waitFor } from '@clinic/platform/testing'
import { makeTenant, type Tenant } from '../src/client'
import { childOf, startProcess, startStack, stopStack, type StackInfo } from '../src/stack'

type Proxy = Awaited<ReturnType<typeof tcpProxy>>

/**
 * A stack of its own for the fault scenarios: its services reach PostgreSQL and RabbitMQ through
 * proxies this run can cut (the servers are never stopped: the run's own containers when a Docker
 * engine answers, else the machine's, which are shared), in a database and a vhost of its own; its
 * processes may be killed and started again.
 */
export interface FaultStack {
  info: StackInfo
  db: Proxy
  mq: Proxy
  /** The run's database, straight (not through the proxy): the checker reads it. */
  databaseUrl: string
  /** The run's vhost. */
  vhost: string
  /** The broker's container (rabbitmqctl runs in it); absent on the machine's broker. */
  brokerContainer?: string
  kill(name: string, signal: NodeJS.Signals): Promise<{ code: number | null; signal: string | null }>
  start(name: string): Promise<void>
  /** Every cut restored and every process running again: what each scenario leaves behind. */
  heal(): Promise<void>
  stop(): Promise<void>
  sql<T = any>(text: string, params?: unknown[]): Promise<T[]>
}

export async function startFaultStack(): Promise<FaultStack> {
  let db!: Proxy
  let mq!: Proxy
  let databaseUrl = ''
  const info = await startStack({
    databaseVia: async (url) => {
      databaseUrl = url
      db = await tcpProxy(new URL(url))
      return db.url
    },
    amqpVia: async (url) => {
      mq = await tcpProxy(new URL(url))
      return mq.url
    },
    env: {
      // Three writers in a loop go past the default 600 a minute; the faults here are others.
      RATE_LIMIT_PER_MINUTE: '100000',
      // Webhook retries about 1, 2, 3 s, then every 5 s for 100 s (each with up to 20% jitter):
      // a receiver down for 20 s, or a delivery waiting out a dead worker's 60 s lease,
      // gets it within seconds of coming back, with attempts to spare (webhooks.ts).
      WEBHOOKS_RETRY_SCHEDULE: ['1,2,3', ...Array<string>(20).fill('5')].join(','),
      // The message stream writes to one patient's address in a loop: the messaging quotas
      // (10 an hour per address) are not the fault under test here.
      COMMS_HOURLY_ADDRESS_LIMIT: '10000',
      COMMS_DAILY_EMAIL_LIMIT: '10000000',
      // Reminders a SIGKILLed comms had claimed go out when its lease runs out: 10 s here instead
      // of a minute, so the scenario waits that (reminders.ts).
      REMINDER_LEASE_MS: '10000',
      // An export a SIGKILLed gateway ran is taken up by the next one after 3 s (exports.ts).
      EXPORT_LEASE_SECONDS: '3',
    },
  })
  const pool = new pg.Pool({ connectionString: databaseUrl, max: 2 })
  pool.on('error', () => undefined)
  const exits = new Map<number, Promise<{ code: number | null; signal: string | null }>>()
  const watch = (pid: number, child?: ChildProcess) => {
    if (child)
      exits.set(
        pid,
        new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal }))),
      )
  }
  const alive = (pid: number) => {
    try {
      process.kill(pid, 0)
      return true
    } catch {
      return false
    }
  }
  const fs: FaultStack = {
    info,
    db,
    mq,
    databaseUrl,
    vhost: decodeURIComponent(new URL(info.cleanup.amqpUrl ?? 'amqp://x/').pathname.slice(1)),
    brokerContainer: info.brokerContainer,
    async kill(name, signal) {
      const pid = info.processes[name]!
      if (!exits.has(pid)) watch(pid, childOf(pid))
      process.kill(pid, signal)
      return exits.get(pid)!
    },
    async start(name) {
      const child = startProcess(name, info.env)
      info.processes[name] = child.pid!
      info.pids.push(child.pid!)
      watch(child.pid!, child)
      const url = name === 'gateway' ? `${info.api}/health` : `${info.serviceUrls[name]}/health/live`
      await waitFor(async () => (await fetch(url)).status > 0, { timeoutMs: 30_000, what: `${name} up` })
    },
    async heal() {
      await Promise.all([...loads].map((l) => l.stop()))
      db.restore()
      mq.restore()
      for (const [name, pid] of Object.entries(info.processes)) if (!alive(pid)) await fs.start(name)
    },
    async stop() {
      await pool.end().catch(() => undefined)
      await stopStack(info)
      await db.close()
      await mq.close()
    },
    async sql(text, params = []) {
      return (await pool.query(text, params)).rows
    },
  }
  return fs
}

export interface Answer {
  status: number
  headers: Headers
  body: any
}

/**
 * One kind of write a clinic makes through the gateway, and how to find its rows and its audit
 * events afterwards. Patients now; appointments and messages are one more of these each.
 */
export interface WriteStream {
  name: string
  /** The audit action every acknowledged write must leave exactly once. */
  action: string
  /** One write. `key` goes out as Idempotency-Key and is findable in the row afterwards. */
  write(api: string, tenant: Tenant, key: string): Promise<Answer>
  /** The created resource's id in a 2xx answer. */
  idOf(answer: Answer): string
  /** Every row the writes made for the company, with the key each came from. */
  rows(fs: FaultStack, companyId: number): Promise<Array<{ id: string; key: string }>>
  /** Messages only: how many were handed to a provider more than once. */
  sentTwice?(fs: FaultStack, companyId: number): Promise<number>
  /** Messages only: the rows still waiting to be handed to a provider (lost if they stay so). */
  pending?(fs: FaultStack, companyId: number): Promise<string[]>
}

export async function post(
  api: string,
  path: string,
  token: string,
  key: string,
  body: unknown,
): Promise<Answer> {
  const res = await fetch(`${api}${path}`, {
    method: 'POST',
    headers: {
      'x-service-token': token,
      'idempotency-key': key,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(10_000),
  })
  const text = await res.text()
  let parsed: unknown = text
  try {
    parsed = text ? JSON.parse(text) : undefined
  } catch {
    /* not JSON */
  }
  return { status: res.status, headers: res.headers, body: parsed }
}

export const patientWrites: WriteStream = {
  name: 'patients',
  action: 'patient.created',
  write: (api, t, key) =>
    post(api, '/patients', t.token, key, { first_name: 'Fault', last_name: key, birth_date: '1980-02-03' }),
  idOf: (a) => a.body.id,
  rows: (fs, companyId) =>
    fs.sql('SELECT id::text AS id, last_name AS key FROM patients.patients WHERE idempresa = $1', [
      companyId,
    ]),
}

/** One patient per tenant (with an email, so that messages have a recipient) for the streams below. */
const patients = new Map<number, Promise<string>>()
function patientOf(api: string, t: Tenant): Promise<string> {
  if (!patients.has(t.companyId))
    patients.set(
      t.companyId,
      post(api, '/patients', t.token, `patient-of-${t.companyId}`, {
        first_name: 'Fault',
        last_name: 'Streams',
        birth_date: '1980-02-03',
        codalmacen: 'ALM1',
        email: 'fault@example.test',
      }).then((a) => {
        if (a.status !== 201) {
          patients.delete(t.companyId)
          throw new Error(`the streams' patient: ${a.status}`)
        }
        return a.body.id as string
      }),
    )
  return patients.get(t.companyId)!
}

/** Each key its own 15-minute slot (the same one on a retry), so that no booking clashes. */
const slots = new Map<string, number>()
function slotOf(key: string) {
  if (!slots.has(key)) slots.set(key, slots.size)
  const start = Date.UTC(2031, 0, 6, 7) + slots.get(key)! * 15 * 60_000
  return { starts_at: new Date(start).toISOString(), ends_at: new Date(start + 15 * 60_000).toISOString() }
}

/** Rows of appointments.appointments whose reason is `<tag>:<key>`. */
const appointmentRows = (tag: string, status?: string) => (fs: FaultStack, companyId: number) =>
  fs.sql(
    `SELECT id::text AS id, substring(reason from $2) AS key FROM appointments.appointments
      WHERE idempresa = $1 AND reason LIKE $3 ${status ? 'AND status = $4' : ''}`,
    [companyId, `^${tag}:(.*)$`, `${tag}:%`, ...(status ? [status] : [])],
  )

async function book(api: string, t: Tenant, key: string, tag: string) {
  return post(api, '/appointments', t.token, `${tag}-${key}`, {
    patient_id: await patientOf(api, t),
    codalmacen: 'ALM1',
    practitioner: 'dra-fault',
    ...slotOf(key),
    reason: `${tag}:${key}`,
  })
}

export const appointmentWrites: WriteStream = {
  name: 'appointments',
  action: 'appointment.created',
  write: (api, t, key) => book(api, t, key, 'book'),
  idOf: (a) => a.body.id,
  rows: appointmentRows('book'),
}

/** A booking, then its check-in: the check-in is the write checked. */
export const checkInWrites: WriteStream = {
  name: 'check-ins',
  action: 'appointment.checked_in',
  async write(api, t, key) {
    const booked = await book(api, t, key, 'checkin')
    if (booked.status !== 201) return booked
    return post(api, `/appointments/${booked.body.id}/checkin`, t.token, `arrived-${key}`, undefined)
  },
  idOf: (a) => a.body.id,
  rows: appointmentRows('checkin', 'checked_in'),
}

export const messageWrites: WriteStream = {
  name: 'messages',
  action: 'comms.message.queued',
  write: async (api, t, key) =>
    post(api, '/comms/send', t.token, key, {
      patient_id: await patientOf(api, t),
      subject: 'Fault',
      body: key,
    }),
  idOf: (a) => a.body.id,
  rows: (fs, companyId) =>
    fs.sql('SELECT id::text AS id, body AS key FROM comms.messages WHERE idempresa = $1', [companyId]),
  // Still queued once the trail has settled: the delivery worker never took it.
  pending: async (fs, companyId) =>
    (
      await fs.sql<{ id: string }>(
        `SELECT id::text AS id FROM comms.messages WHERE idempresa = $1 AND status = 'queued'`,
        [companyId],
      )
    ).map((r) => r.id),
  // Handed to a provider twice shows as two comms.message.sent events on the trail.
  sentTwice: async (fs, companyId) =>
    (
      await fs.sql<{ n: number }>(
        `SELECT count(*)::int AS n FROM (SELECT resource_id FROM audit.events
          WHERE idempresa = $1 AND action = 'comms.message.sent' GROUP BY resource_id HAVING count(*) > 1) x`,
        [companyId],
      )
    )[0]!.n,
}

/** Every kind of write the suite checks; the scenarios run them together. */
export const ALL_STREAMS = [patientWrites, appointmentWrites, checkInWrites, messageWrites]

const loads = new Set<{ stop(): Promise<unknown> }>()

export interface Outcome {
  key: string
  /** The last answer's status; 0 when the last try got no answer at all. */
  status: number
  id?: string
  requestId?: string
  tries: number
  answeredAt: number
  /** The last answer's problem code (or the error thrown), when it was not 2xx. */
  error?: string
  /** Statuses of the tries that were retried (503, 502...) and 'conn' for no answer. */
  retried: Array<number | 'conn'>
  retryAfter: boolean
}

const RETRIABLE = new Set([429, 502, 503, 504])

/**
 * Writers in a loop, each write retried with the same Idempotency-Key on no answer or 429/502/503/504
 * (as a careful client does) until `retryForMs` runs out. `stop()` ends the loops and returns every
 * write's outcome.
 */
export function load(
  fs: FaultStack,
  stream: WriteStream,
  tenant: Tenant,
  o: {
    writers?: number
    pauseMs?: number
    retry?: boolean
    retryForMs?: number
    /** Called in the tick a write is acknowledged. */
    onOk?: (o: Outcome) => void
  } = {},
) {
  const outcomes: Outcome[] = []
  let running = true
  const writer = async () => {
    while (running) {
      const key = randomUUID()
      const out: Outcome = { key, status: 0, tries: 0, answeredAt: 0, retried: [], retryAfter: false }
      const deadline = Date.now() + (o.retryForMs ?? 40_000)
      for (;;) {
        out.tries++
        let a: Answer | null = null
        try {
          a = await stream.write(fs.info.api, tenant, key)
        } catch (err) {
          a = null
          out.error = (err as Error).message
        }
        out.status = a?.status ?? 0
        if (a && a.status >= 300) out.error = a.body?.code ?? String(a.body).slice(0, 80)
        if (a && a.status < 300) {
          out.id = stream.idOf(a)
          out.requestId = a.headers.get('x-request-id') ?? undefined
          out.answeredAt = Date.now()
          o.onOk?.(out)
        }
        const again = o.retry !== false && (a === null || RETRIABLE.has(a.status)) && Date.now() < deadline
        if (!again) break
        out.retried.push(a?.status ?? 'conn')
        if (a?.headers.get('retry-after')) out.retryAfter = true
        // Retry-After when the answer has one (429, 503), else 200 ms.
        const after = Number(a?.headers.get('retry-after'))
        await new Promise((r) => setTimeout(r, after > 0 ? Math.min(after * 1000, 5000) : 200))
      }
      out.answeredAt = Date.now()
      outcomes.push(out)
      if (o.pauseMs) await new Promise((r) => setTimeout(r, o.pauseMs))
    }
  }
  const loops = Array.from({ length: o.writers ?? 3 }, writer)
  const handle = {
    outcomes,
    /** Resolves when `n` more writes have been answered 2xx. */
    async okAfter(n: number, timeoutMs = 30_000) {
      const target = outcomes.filter((x) => x.status < 300 && x.status > 0).length + n
      await waitFor(() => outcomes.filter((x) => x.status < 300 && x.status > 0).length >= target, {
        timeoutMs,
        what: `${n} more acknowledged ${stream.name} writes`,
      }).catch((err) => {
        const last = outcomes.slice(-5).map((x) => `${x.status}${x.error ? ` ${x.error}` : ''}`)
        throw new Error(`${(err as Error).message}; last answers: ${last.join(', ') || 'none'}`)
      })
    },
    async stop() {
      running = false
      loads.delete(handle)
      await Promise.all(loops)
      return outcomes
    },
  }
  loads.add(handle)
  return handle
}

/**
 * Every stream at once for one tenant (three patient writers, one for each other stream; or
 * `patientWriters`), each writer pausing `pauseMs` between writes.
 * `okAfter(n)`: n more acknowledged writes of each stream.
 */
export function loadAll(
  fs: FaultStack,
  tenant: Tenant,
  o: { patientWriters?: number; pauseMs?: number } = {},
) {
  const loads = ALL_STREAMS.map((stream) => ({
    stream,
    load: load(fs, stream, tenant, {
      writers: stream === patientWrites ? (o.patientWriters ?? 3) : 1,
      pauseMs: o.pauseMs,
    }),
  }))
  return {
    okAfter: (n: number, timeoutMs?: number) =>
      Promise.all(loads.map((l) => l.load.okAfter(n, timeoutMs))).then(() => undefined),
    stop: () => Promise.all(loads.map(async ({ stream, load }) => ({ stream, outcomes: await load.stop() }))),
  }
}

/** The checker and the report line for each stream of `loadAll`; `fault=<fault>/<stream>`. */
export async function checkAll(
  fs: FaultStack,
  tenant: Tenant,
  results: Array<{ stream: WriteStream; outcomes: Outcome[] }>,
  fault: string,
  recoverS: (outcomes: Outcome[]) => number,
  extra: Record<string, string | number> = {},
) {
  const verdicts = []
  for (const { stream, outcomes } of results) {
    const v = await check(fs, stream, tenant, outcomes, `${fault}/${stream.name}`, recoverS(outcomes))
    report(v, stream === patientWrites ? extra : {})
    verdicts.push({ v, outcomes })
  }
  return verdicts
}

export interface Verdict {
  fault: string
  sent: number
  ok2xx: number
  recorded: number
  lost: number
  duplicated: number
  sent_twice: number
  recover_s: number
}

/**
 * The checker: every write acknowledged 2xx has its row, and every row its `action` event on the
 * audit trail exactly once (waiting up to `settleMs` for the trail to catch up). A write that got
 * no 2xx may or may not have happened; if it did, it is checked like the others. A key that made
 * two rows was applied twice. A message still queued by then was never handed over: lost too.
 */
export async function check(
  fs: FaultStack,
  stream: WriteStream,
  tenant: Tenant,
  outcomes: Outcome[],
  fault: string,
  recoverS: number,
  settleMs = 30_000,
): Promise<Verdict> {
  const ok = outcomes.filter((x) => x.status >= 200 && x.status < 300)
  const events = async () => {
    const rows = await fs.sql<{ resource_id: string; n: number }>(
      `SELECT resource_id, count(*)::int AS n FROM audit.events
        WHERE idempresa = $1 AND action = $2 GROUP BY resource_id`,
      [tenant.companyId, stream.action],
    )
    return new Map(rows.map((r) => [r.resource_id, r.n]))
  }
  let rows = await stream.rows(fs, tenant.companyId)
  let recorded = await events()
  let pending: string[] = []
  await waitFor(
    async () => {
      rows = await stream.rows(fs, tenant.companyId)
      recorded = await events()
      pending = (await stream.pending?.(fs, tenant.companyId)) ?? []
      return rows.every((r) => recorded.has(r.id)) && !pending.length
    },
    { timeoutMs: settleMs, intervalMs: 250, what: `every ${stream.action} on the audit trail` },
  ).catch(() => undefined) // reported as lost below
  const rowIds = new Set(rows.map((r) => r.id))
  const lostIds = new Set([
    ...ok.filter((x) => !x.id || !rowIds.has(x.id)).map((x) => x.key),
    ...rows.filter((r) => !recorded.has(r.id)).map((r) => r.id),
    ...pending,
  ])
  const perKey = new Map<string, number>()
  for (const r of rows) perKey.set(r.key, (perKey.get(r.key) ?? 0) + 1)
  return {
    fault,
    sent: outcomes.length,
    ok2xx: ok.length,
    recorded: ok.filter((x) => x.id && recorded.get(x.id) === 1).length,
    lost: lostIds.size,
    duplicated: [...recorded.values()].filter((n) => n > 1).length,
    sent_twice:
      [...perKey.values()].filter((n) => n > 1).length +
      ((await stream.sentTwice?.(fs, tenant.companyId)) ?? 0),
    recover_s: recoverS,
  }
}

/** The Jepsen-style line every scenario prints. */
export function report(v: Verdict | { fault: string }, extra: Record<string, string | number> = {}): string {
  const line = Object.entries({ ...v, ...extra })
    .map(([k, val]) => `${k}=${val}`)
    .join(' ')
  process.stdout.write(`${line}\n`)
  return line
}

/** Seconds from `since` to the first write acknowledged after it (-1 if none). */
export function recoverySeconds(outcomes: Outcome[], since: number): number {
  const first = outcomes
    .filter((x) => x.status >= 200 && x.status < 300 && x.answeredAt > since)
    .reduce((m, x) => Math.min(m, x.answeredAt), Infinity)
  return first === Infinity ? -1 : Math.round((first - since) / 100) / 10
}

/** Polls a URL's status every `intervalMs` until stopped; returns every status seen, in order. */
export function pollStatus(url: string, intervalMs = 200) {
  const seen: Array<{ at: number; status: number; body: string }> = []
  let running = true
  const loop = (async () => {
    while (running) {
      try {
        const res = await fetch(url, { signal: AbortSignal.timeout(3000) })
        seen.push({ at: Date.now(), status: res.status, body: await res.text() })
      } catch {
        seen.push({ at: Date.now(), status: 0, body: '' })
      }
      await new Promise((r) => setTimeout(r, intervalMs))
    }
  })()
  return {
    seen,
    async stop() {
      running = false
      await loop
      return seen
    },
  }
}

type BrokerOf = Pick<FaultStack, 'vhost' | 'brokerContainer'>

/** Closes the RabbitMQ connections of this run's vhost only (never anyone else's). */
export async function closeOwnConnections({ vhost, brokerContainer: container }: BrokerOf): Promise<number> {
  const stdout = await rabbitmqctl(['list_connections', '-q', '--no-table-headers', 'vhost'], { container })
  const count = stdout.split('\n').filter((l) => l.trim() === vhost).length
  // One call for all of them: rabbitmqctl starts an Erlang VM per call, seconds on a busy machine.
  await rabbitmqctl(['close_all_connections', '--vhost', vhost, 'fault test: connection closed'], {
    container,
  })
  return count
}

/** Messages waiting in each queue of the run's vhost. */
export async function queueDepths({
  vhost,
  brokerContainer: container,
}: BrokerOf): Promise<Record<string, number>> {
  const stdout = await rabbitmqctl(
    ['list_queues', '-q', '--no-table-headers', '-p', vhost, 'name', 'messages'],
    {
      container,
    },
  )
  return Object.fromEntries(
    stdout
      .split('\n')
      .map((l) => l.trim().split(/\s+/))
      .filter(([name]) => name)
      .map(([name, n]) => [name!, Number(n)]),
  )
}

export { makeTenant, waitFor }
export type { Tenant }
