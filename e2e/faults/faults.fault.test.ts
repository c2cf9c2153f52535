import { Amqp, createLogger, eventTypes } from '@clinic/platform'
import { gatewayHeaders, testPrincipal } from '@clinic/platform/testing'
import { workQueues } from '../../packages/platform/topology.cjs'
import {
  check,
  checkAll,
  closeOwnConnections,
  load,
  loadAll,
  makeTenant,
  patientWrites,
  pollStatus,
  queueDepths,
  recoverySeconds,
  report,
  startFaultStack,
  waitFor,
  type FaultStack,
  type Outcome,
  type Verdict,
} from './harness'
import {
  acksAfter,
  checkWebhooks,
  leasedPairs,
  logLines,
  startReceiver,
  subscribe,
  type Receiver,
  type WebhookVerdict,
} from './webhooks'
import { bookReminders, checkReminders, clockPastDue, killWhileSending, scheduled } from './reminders'
import { exportThrough, seedPatients } from './exports'
import { gatewaySignerOf, moveClock } from '../src/stack'

/**
 * Every fault a clinic will meet, each under a steady stream of writes through the gateway, each
 * checked like Jepsen does: what got a 2xx is on the audit trail exactly once. One stack for the
 * file (scenarios run in order); each scenario heals what it broke even when it fails.
 */
let fs: FaultStack
const CUT_MS = 5000
/** A real outage may last a minute; a third of one keeps the suite in its time budget and still has each delivery retried several times. */
const RECEIVER_DOWN_MS = 20_000
// Each step below waits at most 30 s and says what it waited for; the scenario as a whole may
// take longer than the global 60 s on a busy machine.
jest.setTimeout(150_000)
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms))

// Containers, migrations and eight services: about 20 s alone on the machine, minutes when it is
// loaded (a run at a load average of 20 passed 90 s).
let starting: Promise<FaultStack> | undefined
beforeAll(async () => {
  starting = startFaultStack()
  fs = await starting
}, 300_000)

afterEach(async () => {
  await fs?.heal()
}, 60_000)

// A start that outlived its hook is waited for and stopped too: its processes would keep Jest from
// exiting.
afterAll(async () => {
  const started = fs ?? (await starting?.catch(() => undefined))
  await started?.stop()
}, 360_000)

const ready = (name: string) => `${fs.info.serviceUrls[name]}/health/ready`
/** Statuses seen while [from, to), and whether it was 200 again after `to`. */
const during = (seen: Array<{ at: number; status: number }>, from: number, to: number) =>
  seen.filter((s) => s.at >= from && s.at < to).map((s) => s.status)
const backAt = (seen: Array<{ at: number; status: number }>, since: number) =>
  seen.find((s) => s.at >= since && s.status === 200)?.at

function expectClean(v: Verdict, outcomes: Outcome[]) {
  expect(v.lost).toBe(0)
  expect(v.duplicated).toBe(0)
  expect(v.sent_twice).toBe(0)
  // Careful clients (retrying 429/502/503 and dropped connections with the same Idempotency-Key)
  // see every write succeed.
  expect(outcomes.filter((o) => o.status < 200 || o.status >= 300).map((o) => o.status)).toEqual([])
  expect(v.ok2xx).toBeGreaterThan(0)
}

function expectAllClean(verdicts: Array<{ v: Verdict; outcomes: Outcome[] }>) {
  for (const { v, outcomes } of verdicts) expectClean(v, outcomes)
}

test('rabbitmq: the run’s connections closed, then the broker cut for 5 s', async () => {
  const t = await makeTenant(['ALM1'], fs.info)
  const writes = loadAll(fs, t)
  await writes.okAfter(5)
  expect(await closeOwnConnections(fs)).toBeGreaterThan(0)
  await writes.okAfter(5)

  const probes = ['patients', 'audit'].map((s) => pollStatus(ready(s)))
  await pause(500)
  fs.mq.cut()
  const cutAt = Date.now()
  await pause(CUT_MS)
  fs.mq.restore()
  const restoredAt = Date.now()
  await Promise.all(
    probes.map((p) => waitFor(() => backAt(p.seen, restoredAt), { timeoutMs: 30_000, what: 'ready again' })),
  )
  await writes.okAfter(5)
  const results = await writes.stop()
  const seen = await Promise.all(probes.map((p) => p.stop()))
  // Readiness told the truth: 503 while the broker was away, 200 again by itself.
  for (const s of seen) expect(during(s, cutAt + 1000, restoredAt)).toContain(503)
  const recover = Math.max(...seen.map((s) => backAt(s, restoredAt)! - restoredAt)) / 1000
  expectAllClean(
    await checkAll(fs, t, results, 'rabbitmq-close-and-cut', () => recover, { refused: fs.mq.refused }),
  )
})

test('postgresql: cut for 5 s mid-stream; 503 with Retry-After meanwhile, back with no restart', async () => {
  const t = await makeTenant(['ALM1'], fs.info)
  const writes = loadAll(fs, t)
  await writes.okAfter(5)
  const pids = { ...fs.info.processes }
  const dlqBefore = await queueDepths(fs)
  const probe = pollStatus(ready('patients'))
  const gateway = pollStatus(`${fs.info.api}/health`)
  await pause(500)
  fs.db.cut()
  const cutAt = Date.now()
  await pause(CUT_MS)
  fs.db.restore()
  const restoredAt = Date.now()
  await waitFor(() => backAt(probe.seen, restoredAt), { timeoutMs: 30_000, what: 'patients ready again' })
  await writes.okAfter(5)
  const results = await writes.stop()
  const seen = await probe.stop()
  const gw = await gateway.stop()

  // What clients saw while it was away: 503 upstream_unavailable with Retry-After, never a 500.
  const outcomes = results.flatMap((r) => r.outcomes)
  const retried = outcomes.flatMap((o) => o.retried)
  expect(retried).toContain(503)
  expect(retried.filter((s) => s !== 503)).toEqual([])
  expect(outcomes.some((o) => o.retryAfter)).toBe(true)
  expect(during(seen, cutAt + 2500, restoredAt)).toContain(503)
  expect(fs.info.processes).toEqual(pids) // recovered by itself: nothing was restarted
  const gwDown = gw.find((s) => s.at > cutAt + 2500 && s.at < restoredAt)
  // The gateway's health names the part that is down.
  expect(gwDown?.status).toBe(503)
  expect(JSON.parse(gwDown!.body).down).toEqual(expect.arrayContaining(['database', 'patients.database']))
  const verdicts = await checkAll(fs, t, results, 'postgres-cut', (o) => recoverySeconds(o, restoredAt), {
    ready_back_s: (backAt(seen, restoredAt)! - restoredAt) / 1000,
    gateway_health_during: `${gwDown?.status}:${gwDown?.body.replace(/\s/g, '')}`,
  })
  // An outage is not poison: the consumers held their messages; none was dead-lettered.
  const dlqAfter = await queueDepths(fs)
  const deadLettered = Object.keys(dlqAfter)
    .filter((q) => q.endsWith('.dlq'))
    .reduce((n, q) => n + dlqAfter[q]! - (dlqBefore[q] ?? 0), 0)
  process.stdout.write(`fault=postgres-cut dead_lettered=${deadLettered}\n`)
  expect(deadLettered).toBe(0)
  expectAllClean(verdicts)
})

test('patients SIGKILLed between commit and publish: its outbox goes out when it is back', async () => {
  const t = await makeTenant(['ALM1'], fs.info)
  const writes = load(fs, patientWrites, t)
  await writes.okAfter(3)
  // With the broker away, acknowledged writes are committed but not yet published.
  fs.mq.cut()
  const unpublished = async () =>
    (
      await fs.sql<{ n: number }>('SELECT count(*)::int AS n FROM patients.outbox WHERE published_at IS NULL')
    )[0]!.n
  await waitFor(async () => (await unpublished()) >= 5, {
    timeoutMs: 20_000,
    what: 'unpublished outbox rows',
  })
  const exit = await fs.kill('patients', 'SIGKILL')
  expect(exit.signal).toBe('SIGKILL')
  const killedAt = Date.now()
  const pending = await unpublished()
  fs.mq.restore()
  await pause(1000) // the gateway answers 503 for patients meanwhile; the writers retry
  await fs.start('patients')
  await writes.okAfter(5)
  const outcomes = await writes.stop()
  const v = await check(
    fs,
    patientWrites,
    t,
    outcomes,
    'patients-sigkill-before-publish',
    recoverySeconds(outcomes, killedAt),
  )
  report(v, { unpublished_at_kill: pending })
  expectClean(v, outcomes)
  expect(await unpublished()).toBe(0)
})

test('audit SIGKILLed mid-stream: redelivered events are recorded once', async () => {
  const t = await makeTenant(['ALM1'], fs.info)
  const writes = loadAll(fs, t)
  await writes.okAfter(5)
  const exit = await fs.kill('audit', 'SIGKILL')
  expect(exit.signal).toBe('SIGKILL')
  const killedAt = Date.now()
  await writes.okAfter(5) // writes go on; their events wait in the queue
  await fs.start('audit')
  const back = Date.now()
  await writes.okAfter(5)
  expectAllClean(await checkAll(fs, t, await writes.stop(), 'audit-sigkill', () => (back - killedAt) / 1000))
})

test('poison messages on every queue end in its dead-letter queue; the queue goes on', async () => {
  const t = await makeTenant(['ALM1'], fs.info)
  const writes = load(fs, patientWrites, t)
  await writes.okAfter(5)
  const before = await queueDepths(fs)
  // The work queues (the broker's topology: each with its .wait and .dlq).
  const queues = workQueues().map((w) => w.queue)
  expect(queues.every((q) => q in before)).toBe(true)
  expect(queues.length).toBeGreaterThan(0)
  // Every registered event type (so every consumer's bindings), plus any other this run has seen.
  const types = new Set<string>(Object.keys(eventTypes))
  for (const r of await fs.sql<{ action: string }>('SELECT DISTINCT action FROM audit.events'))
    types.add(r.action)
  const amqp = new Amqp({
    url: fs.info.cleanup.amqpUrl!,
    log: createLogger({ service: 'fault-test', level: 'silent' }),
    name: 'fault-test',
  })
  await amqp.start()
  const garbage = [
    Buffer.from('{not json'),
    Buffer.from('{"hello":"not a CloudEvent"}'),
    Buffer.from([0xff, 0x00]),
  ]
  try {
    for (const type of types)
      await amqp.publishRaw(garbage.map((body, i) => ({ id: `poison-${type}-${i}`, type, body })))
  } finally {
    await amqp.close()
  }
  const sentAt = Date.now()
  // Each queue binds '#' or its own types; a queue bound to all receives every poison message.
  let now: Record<string, number> = {}
  await waitFor(
    async () => {
      now = await queueDepths(fs)
      return queues.every((q) => (now[`${q}.dlq`] ?? 0) - (before[`${q}.dlq`] ?? 0) >= garbage.length)
    },
    { timeoutMs: 20_000, what: 'poison in the dead-letter queues' },
  ).catch((err) => {
    throw new Error(`${(err as Error).message}; before ${JSON.stringify(before)}, now ${JSON.stringify(now)}`)
  })
  await writes.okAfter(5)
  const outcomes = await writes.stop()
  const after = await queueDepths(fs)
  const v = await check(fs, patientWrites, t, outcomes, 'poison-messages', recoverySeconds(outcomes, sentAt))
  report(v, {
    poison: types.size * garbage.length,
    dead_lettered: queues
      .map((q) => `${q}.dlq:${(after[`${q}.dlq`] ?? 0) - (before[`${q}.dlq`] ?? 0)}`)
      .join(','),
  })
  expectClean(v, outcomes)
})

test('gateway SIGKILLed under load: domain events all recorded, and every answered request has its access event', async () => {
  const t = await makeTenant(['ALM1'], fs.info)
  let armed = false
  let killedAt = 0
  const writes = load(fs, patientWrites, t, {
    // Killed the moment an answer arrives: that request's access event cannot have been flushed.
    onOk: () => {
      if (!armed) return
      armed = false
      killedAt = Date.now()
      process.kill(fs.info.processes.gateway!, 'SIGKILL')
    },
  })
  await writes.okAfter(10)
  armed = true
  await waitFor(() => killedAt > 0, { timeoutMs: 10_000, what: 'the kill' })
  await pause(300)
  await fs.start('gateway')
  await writes.okAfter(5)
  const outcomes = await writes.stop()
  const v = await check(
    fs,
    patientWrites,
    t,
    outcomes,
    'gateway-sigkill',
    recoverySeconds(outcomes, killedAt),
  )
  // The checker's second property: every answered request has its http.request event.
  const answered = outcomes.filter((o) => o.status >= 200 && o.status < 300 && o.requestId)
  const ids = answered.map((o) => o.requestId!)
  const missing = async () => {
    const found = await fs.sql<{ request_id: string }>(
      `SELECT DISTINCT request_id FROM audit.events
        WHERE idempresa = $1 AND action = 'http.request' AND request_id = ANY($2)`,
      [t.companyId, ids],
    )
    return ids.length - found.length
  }
  await waitFor(async () => (await missing()) === 0, { timeoutMs: 5000, what: 'access events' }).catch(
    () => undefined,
  )
  const accessLost = await missing()
  report(v, { answered: answered.length, access_lost: accessLost })
  expectClean(v, outcomes)
  // The gateway commits each answer's access event before the answer leaves (group commit).
  expect(accessLost).toBe(0)
})

test('patients SIGTERMed under load: in-flight requests answered, exit within the grace period, no failed write', async () => {
  const t = await makeTenant(['ALM1'], fs.info)
  const writes = load(fs, patientWrites, t)
  await writes.okAfter(5)
  // A burst straight at the service, so that requests are in its hands when SIGTERM arrives.
  const principal = testPrincipal({ companyId: t.companyId, companyCenters: ['ALM1'], username: t.username })
  let firstAnswer!: () => void
  const answered = new Promise<void>((resolve) => (firstAnswer = resolve))
  const burst = Array.from({ length: 30 }, async (_, i) => {
    try {
      const body = JSON.stringify({ first_name: 'Burst', last_name: `burst-${i}`, birth_date: '1980-02-03' })
      const res = await fetch(`${fs.info.serviceUrls.patients}/patients`, {
        method: 'POST',
        headers: {
          ...(await gatewayHeaders(
            principal,
            'POST',
            '/patients',
            gatewaySignerOf(fs.info),
            undefined,
            body,
          )),
          'content-type': 'application/json',
        },
        body,
      })
      await res.text()
      firstAnswer()
      return { status: res.status, at: Date.now() }
    } catch (err) {
      const code = ((err as Error).cause as { code?: string } | undefined)?.code ?? 'unknown'
      return { status: code === 'ECONNREFUSED' ? 'refused' : `dropped:${code}`, at: Date.now() }
    }
  })
  // SIGTERM the moment the first answer is back: the rest of the burst is in the service's hands.
  await answered
  const termAt = Date.now()
  const exit = await fs.kill('patients', 'SIGTERM')
  const exitS = (Date.now() - termAt) / 1000
  const answers = await Promise.all(burst)
  await fs.start('patients') // the replacement
  const back = Date.now()
  await writes.okAfter(5)
  const outcomes = await writes.stop()
  const v = await check(fs, patientWrites, t, outcomes, 'patients-sigterm', recoverySeconds(outcomes, termAt))
  const inFlight = answers.filter((a) => a.at >= termAt && a.status === 201)
  report(v, {
    exit_code: `${exit.code}`,
    exit_s: exitS,
    finished_after_sigterm: inFlight.length,
    burst: answers.map((a) => a.status).join(','),
    down_s: (back - termAt) / 1000,
  })
  expect(exit.code).toBe(0) // drained, not forced out by the grace period
  expect(exitS).toBeLessThan(10)
  // Every request the service took got its answer (201, or 503 while closing); none was dropped.
  expect(answers.filter((a) => typeof a.status === 'string' && a.status.startsWith('dropped'))).toEqual([])
  expect(answers.filter((a) => typeof a.status === 'number' && a.status !== 201 && a.status !== 503)).toEqual(
    [],
  )
  expectClean(v, outcomes)
})

/**
 * Webhooks: three receivers (three endpoints of `["*"]`) per company, the four write streams at a
 * gentler pace (a few hundred events a scenario), the fault mid-fan-out; then every event the
 * company produced (its catalogue events on the audit trail) must have been answered 2xx by every
 * receiver exactly once, every delivery verified with standardwebhooks (webhooks.ts).
 */
const receivers = new Set<Receiver>()
afterEach(async () => {
  await Promise.all([...receivers].map((r) => r.close()))
  receivers.clear()
}, 30_000)

async function webhookTenant() {
  const t = await makeTenant(['ALM1'], fs.info)
  const rs = await Promise.all(['a', 'b', 'c'].map((name) => startReceiver(name)))
  for (const r of rs) receivers.add(r)
  await subscribe(fs, t, rs)
  return { t, rs, writes: loadAll(fs, t, { patientWriters: 1, pauseMs: 100 }) }
}

function expectDelivered(w: WebhookVerdict) {
  expect(w.lost).toBe(0)
  expect(w.duplicated).toBe(0)
  expect(w.feed_missing).toBe(0)
  expect(w.feed_repeated).toBe(0)
  expect(w.unknown).toBe(0)
  expect(w.bad_signatures).toBe(0)
  expect(w.failed).toBe(0)
  expect(w.events).toBeGreaterThan(0)
}

test('webhooks: the broker cut for 5 s mid-fan-out; every event reaches every endpoint once', async () => {
  const { t, rs, writes } = await webhookTenant()
  await acksAfter(rs, 20)
  fs.mq.cut()
  await pause(CUT_MS)
  fs.mq.restore()
  const restoredAt = Date.now()
  await writes.okAfter(5)
  await acksAfter(rs, 5)
  const verdicts = await checkAll(fs, t, await writes.stop(), 'webhooks-broker-cut', (o) =>
    recoverySeconds(o, restoredAt),
  )
  const w = await checkWebhooks(fs, t, rs, 'webhooks-broker-cut')
  report(w)
  expectAllClean(verdicts)
  expectDelivered(w)
  expect(w.repeated_in_flight).toBe(0)
})

test('webhooks: the database cut for 5 s the instant a receiver answers 2xx; the outcome is recorded, not sent again', async () => {
  const { t, rs, writes } = await webhookTenant()
  await acksAfter(rs, 20)
  // The worker logs each outcome it could not write and tries again (worker.ts, record).
  const RECORD_RETRY = 'recording an attempt failed'
  const recordRetriesBefore = logLines(fs, 'webhooks', RECORD_RETRY).length
  let cutAt = 0
  rs[0]!.onAck = () => {
    if (cutAt) return
    cutAt = Date.now()
    fs.db.cut() // the worker holds a 2xx it cannot record yet
  }
  await waitFor(() => cutAt > 0, { timeoutMs: 10_000, what: 'the cut' })
  await pause(CUT_MS)
  fs.db.restore()
  const restoredAt = Date.now()
  await writes.okAfter(5)
  await acksAfter(rs, 5)
  const verdicts = await checkAll(fs, t, await writes.stop(), 'webhooks-postgres-cut', (o) =>
    recoverySeconds(o, restoredAt),
  )
  // A claim the database committed but whose answer the cut lost leaves its deliveries leased,
  // never sent: they go out once when the lease runs out (60 s), so this may wait that long.
  const w = await checkWebhooks(fs, t, rs, 'webhooks-postgres-cut')
  // Outcomes (deliveries) whose write had to be tried again.
  const recordedAgain = new Set(
    logLines(fs, 'webhooks', RECORD_RETRY)
      .slice(recordRetriesBefore)
      .map((l) => l.delivery_id as string),
  ).size
  report(w, { outcomes_recorded_late: recordedAgain })
  expectAllClean(verdicts)
  expectDelivered(w)
  expect(w.repeated_in_flight).toBe(0)
  // The cut caught the worker with answers in hand: it wrote them later instead of sending again.
  expect(recordedAgain).toBeGreaterThan(0)
})

test(`webhooks: two receivers down for ${RECEIVER_DOWN_MS / 1000} s (one refusing, one resetting); retried, all arrive once`, async () => {
  const { t, rs, writes } = await webhookTenant()
  await acksAfter(rs, 20)
  const [refusing, resetting, up] = rs as [Receiver, Receiver, Receiver]
  await refusing.setMode('refuse')
  await resetting.setMode('reset')
  const upBefore = up.acked
  await pause(RECEIVER_DOWN_MS)
  const upDuring = up.acked - upBefore
  await refusing.setMode('up')
  await resetting.setMode('up')
  const backAt = Date.now()
  await writes.okAfter(5)
  await acksAfter(rs, 5)
  const verdicts = await checkAll(fs, t, await writes.stop(), 'webhooks-receiver-down', (o) =>
    recoverySeconds(o, backAt),
  )
  const w = await checkWebhooks(fs, t, rs, 'webhooks-receiver-down')
  report(w, {
    down_s: RECEIVER_DOWN_MS / 1000,
    dropped_unanswered: resetting.dropped,
    answered_by_the_live_one_meanwhile: upDuring,
  })
  expectAllClean(verdicts)
  expectDelivered(w)
  expect(w.repeated_in_flight).toBe(0)
  // The outage was real: attempts were refused or dropped, and retried after it.
  expect(resetting.dropped).toBeGreaterThan(0)
  expect(w.retried).toBeGreaterThan(0)
  // One dead endpoint never holds up another: the live receiver was answering all along.
  expect(upDuring).toBeGreaterThan(0)
})

test('webhooks SIGKILLed the instant a receiver answers 2xx: repeats only for attempts in flight then', async () => {
  const { t, rs, writes } = await webhookTenant()
  await acksAfter(rs, 20)
  let exit: Promise<{ code: number | null; signal: string | null }> | undefined
  rs[0]!.onAck = () => {
    // Killed before it can record this 2xx (or the others in flight): each may be sent again.
    exit ??= fs.kill('webhooks', 'SIGKILL')
  }
  await waitFor(() => exit !== undefined, { timeoutMs: 10_000, what: 'the kill' })
  expect((await exit!).signal).toBe('SIGKILL')
  const killedAt = Date.now()
  const inFlight = await leasedPairs(fs, t)
  await writes.okAfter(3) // writes go on; their events wait in webhooks.events
  await fs.start('webhooks')
  const back = Date.now()
  await writes.okAfter(5)
  const verdicts = await checkAll(
    fs,
    t,
    await writes.stop(),
    'webhooks-sigkill',
    () => (back - killedAt) / 1000,
  )
  // What was leased at the kill is claimed again when its lease runs out (60 s).
  const w = await checkWebhooks(fs, t, rs, 'webhooks-sigkill', { allowedRepeats: inFlight })
  report(w, { leased_at_kill: inFlight.size, down_s: (back - killedAt) / 1000 })
  expectAllClean(verdicts)
  expectDelivered(w)
  expect(w.repeated_in_flight).toBeLessThanOrEqual(inFlight.size)
  expect(inFlight.size).toBeGreaterThan(0) // the kill was mid-fan-out
})

/**
 * Reminders (reminders.ts): 200 due at the same instant, comms SIGKILLed while its worker sends
 * them. Each reminder is settled in the transaction that queues its message, only while its claim
 * is still its own: one the dead process committed is never sent again, one it had claimed goes
 * out once when its lease runs out (10 s in this stack), none is lost.
 */
const REMINDERS = 200

test('comms SIGKILLed with reminders due: each sent once after restart', async () => {
  const b = await bookReminders(fs, REMINDERS)
  await scheduled(fs, b.t.companyId, REMINDERS)
  try {
    clockPastDue(fs, b.startsAt)
    const kill = await killWhileSending(fs, b.t.companyId, REMINDERS)
    expect(kill.signal).toBe('SIGKILL')
    await fs.start('comms')
    const v = await checkReminders(fs, b, kill, Date.now(), 'comms-sigkill-reminders')
    report(v)
    expect(v.lost).toBe(0)
    expect(v.duplicated).toBe(0)
    expect(v.messages).toBe(REMINDERS)
    // At most once to the provider: what the kill caught mid-send stays `sending`, never resent.
    expect(v.handed_twice).toBe(0)
    expect(v.sent_unwritten).toBe(0)
    expect(v.left_queued).toBe(0)
    // The kill was mid-batch: some sent, others claimed and not settled.
    expect(v.sent_before_kill).toBeGreaterThan(0)
    expect(v.sent_before_kill).toBeLessThan(REMINDERS)
    expect(v.leased_at_kill).toBeGreaterThan(0)
  } finally {
    moveClock(fs.info, 0)
  }
})

test('a Bulk Data export through a gateway SIGKILLed mid-file, the database cut, the broker cut and its snapshot ended: it completes, every patient once, no error file', async () => {
  const t = await makeTenant(['ALM1'], fs.info)
  const patients = await seedPatients(fs, t.companyId, 400)
  const verdicts = [
    await exportThrough(fs, t, patients, 'gateway SIGKILLed', async () => {
      await fs.kill('gateway', 'SIGKILL')
      await fs.start('gateway')
    }),
    await exportThrough(fs, t, patients, `database cut ${CUT_MS / 1000} s`, async () => {
      fs.db.cut()
      await pause(CUT_MS)
      fs.db.restore()
    }),
    await exportThrough(fs, t, patients, `broker cut ${CUT_MS / 1000} s`, async () => {
      fs.mq.cut()
      await pause(CUT_MS)
      fs.mq.restore()
    }),
    // The snapshot's own backend ended while pages are read in it: a page then asked for is the
    // services' 409 fhir_snapshot_gone, and the export starts again in a new one (not an error line).
    await exportThrough(fs, t, patients, 'the snapshot ended', async () => {
      await fs.sql(
        `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
          WHERE application_name = 'clinic-fhir-export-snapshot'`,
      )
    }),
  ]
  for (const { fault, ...counts } of verdicts) report({ fault }, counts)
  for (const v of verdicts)
    expect(v).toEqual({ fault: v.fault, exported: patients.length, errors: 0, missing: 0, twice: 0 })
})
