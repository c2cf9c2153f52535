// Webhooks end to end: signed domain events published to RabbitMQ as the services publish them
// (the platform's Amqp, signed with the appointments service's own key, which is the only key the
// webhooks consumer takes for source clinic/appointments) -> the webhooks consumer stores them and
// queues a delivery per matching endpoint -> the delivery worker (PostgreSQL job table, SKIP LOCKED
// claims) POSTs each, signed per Standard Webhooks, to loopback node:http receivers in a child
// process that verify every signature and note each arrival.
//   0. baseline: a bare node:http client (keep-alive agent as the worker's, the same signing, the
//      same in-flight cap: 4 per endpoint) POSTing to the same receivers, in the same run;
//   1. fan-out: 10,000 events at once to a company with 5 endpoints (50,000 deliveries):
//      deliveries per second and event time -> arrival p50 / p99 (target >= 500 deliveries/s);
//   2. a steady 100 events/s (500 deliveries/s), every receiver healthy: p99 < 1 s;
//   3. the same while one endpoint hangs 10 s per request: the four healthy receivers' p99 must be
//      what it was in 2.
// CPU per delivery from /proc (webhooks, the PostgreSQL backends of this database, RabbitMQ, the
// receivers, this process as publisher); SQL statements per delivery (db_statements_total); what
// the database backends were doing, sampled from pg_stat_activity every 100 ms.
// Run: node bench/webhooks.mjs after `npm run build` (a database and a vhost of its own).
// EVENTS, STEADY_S, RATE, HISTORY (events already delivered, seeded) change the sizes.
import { fork } from 'node:child_process'
import { createHmac, randomUUID } from 'node:crypto'
import http from 'node:http'
import os from 'node:os'
import { createRequire } from 'node:module'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

const HOOK_SIGNATURE = (key, id, ts, body) =>
  `v1,${createHmac('sha256', key).update(`${id}.${ts}.${body}`).digest('base64')}`

if (process.argv[2] === 'receiver') receiver()
else await main()

/**
 * The receivers (child process): one node:http server per endpoint. Each checks the Standard
 * Webhooks signature, notes the arrival (ms) against the payload's `timestamp` (the event's time),
 * and answers 200, or after `hang` ms.
 */
function receiver() {
  const eps = []
  const on = {
    async start({ count }) {
      for (let i = 0; i < count; i++) {
        const ep = { key: null, hangMs: 0, first: new Map(), requests: 0, duplicates: 0, bad: 0, unique: 0 }
        ep.server = http.createServer((req, res) => {
          const arrival = Date.now()
          const chunks = []
          req.on('data', (c) => chunks.push(c))
          req.on('end', () => {
            ep.requests++
            const body = Buffer.concat(chunks).toString('utf8')
            const id = req.headers['webhook-id']
            const ts = req.headers['webhook-timestamp']
            const want = HOOK_SIGNATURE(ep.key, id, ts, body)
            if (
              !String(req.headers['webhook-signature'] ?? '')
                .split(' ')
                .includes(want)
            ) {
              ep.bad++
              res.writeHead(400).end()
              return
            }
            if (ep.first.has(id)) ep.duplicates++
            else {
              ep.first.set(id, [arrival, Date.parse(JSON.parse(body).timestamp)])
              ep.unique++
            }
            if (!ep.hangMs) return void res.writeHead(200).end()
            const timer = setTimeout(() => res.writeHead(200).end(), ep.hangMs)
            res.on('close', () => clearTimeout(timer))
          })
        })
        await new Promise((r) => ep.server.listen(0, '127.0.0.1', r))
        eps.push(ep)
      }
      return eps.map((e) => e.server.address().port)
    },
    keys({ keys }) {
      keys.forEach((k, i) => (eps[i].key = Buffer.from(k, 'base64')))
    },
    hang({ index, ms }) {
      eps[index].hangMs = ms
    },
    counts: () => eps.map(({ unique, requests, duplicates, bad }) => ({ unique, requests, duplicates, bad })),
    /** Latency (arrival - event time) of the first arrival of events whose time is in [from, to). */
    stats({ from, to, endpoints }) {
      const lat = []
      let last = 0
      let first = Infinity
      for (const i of endpoints)
        for (const [arrival, time] of eps[i].first.values())
          if (time >= from && time < to) {
            lat.push(arrival - time)
            last = Math.max(last, arrival)
            first = Math.min(first, arrival)
          }
      lat.sort((a, b) => a - b)
      const q = (p) => lat[Math.min(lat.length - 1, Math.floor(p * lat.length))] ?? NaN
      return { n: lat.length, p50: q(0.5), p99: q(0.99), max: lat.at(-1) ?? NaN, first, last }
    },
  }
  process.on('message', async ({ id, op, args }) => process.send({ id, result: await on[op](args) }))
  process.on('disconnect', () => process.exit(0))
}

async function main() {
  const lib = await import('./lib.mjs')
  const {
    ROOT,
    BENCH_SECRET,
    benchTenant,
    cpuSeconds,
    cpuOf,
    pidsOf,
    machine,
    machineCpu,
    record,
    sampleBackends,
  } = lib
  const { serviceEnv } = await import('../scripts/lib.mjs')
  const pg = (await import('pg')).default
  const require = createRequire(path.join(ROOT, 'packages', 'platform', 'package.json'))
  const { Amqp, createLogger, makeEvent } = require(
    path.join(ROOT, 'packages', 'platform', 'dist', 'index.js'),
  )

  const EVENTS = Number(process.env.EVENTS ?? 10_000)
  const ENDPOINTS = 5
  const RATE = Number(process.env.RATE ?? 100)
  const STEADY_S = Number(process.env.STEADY_S ?? 20)
  const HANG_MS = 10_000
  const BARE = Number(process.env.BARE ?? 10_000)
  const HISTORY = Number(process.env.HISTORY ?? 50_000)
  const FANOUT_TIMEOUT_S = 200
  const sleep = (ms) => new Promise((r) => setTimeout(r, ms))
  const load0 = os.loadavg()[0]

  // The receivers first: their URLs go into the endpoints.
  const child = fork(fileURLToPath(import.meta.url), ['receiver'], { stdio: 'inherit' })
  let rpcId = 0
  const pending = new Map()
  child.on('message', ({ id, result }) => (pending.get(id)(result), pending.delete(id)))
  child.on('exit', (code) => code && (console.error(`the receivers exited (${code})`), process.exit(1)))
  const rpc = (op, args = {}) =>
    new Promise((resolve) => {
      pending.set(++rpcId, resolve)
      child.send({ id: rpcId, op, args })
    })
  const ports = await rpc('start', { count: ENDPOINTS })

  const { env: base, token } = await benchTenant('clinic_bench_webhooks', {
    services: ['webhooks'],
    centers: ['C1'],
  })
  // claim_deliveries' calls and time in pg_stat_user_functions (for the service's connections).
  const datname = new URL(base.DATABASE_URL).pathname.slice(1)
  const mon = new pg.Client({
    connectionString: process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres',
  })
  await mon.connect()
  await mon.query(`ALTER DATABASE ${datname} SET track_functions = 'all'`)
  const stack = await lib.startStack(base, ['webhooks'], {
    WEBHOOKS_ALLOW_INSECURE: 'true',
    WEBHOOKS_SECRET_KEY: BENCH_SECRET,
  })
  const { api, env, procs } = stack
  // Whatever happens, no process of this bench outlives it.
  process.once('exit', () => [...Object.values(procs), child].forEach((p) => p.kill()))
  const headers = { 'x-service-token': token, 'content-type': 'application/json' }
  const endpoints = []
  for (const [i, port] of ports.entries()) {
    const res = await fetch(`${api}/webhooks/endpoints`, {
      method: 'POST',
      headers,
      body: JSON.stringify({
        url: `http://127.0.0.1:${port}/hook`,
        event_types: ['*'],
        description: `r${i}`,
      }),
    })
    if (res.status !== 201) throw new Error(`endpoint: ${res.status} ${await res.text()}`)
    const e = await res.json()
    endpoints.push({ id: e.id, url: e.url, key: Buffer.from(e.secret.slice('whsec_'.length), 'base64') })
  }
  await rpc('keys', { keys: endpoints.map((e) => e.key.toString('base64')) })
  const all = [...endpoints.keys()]

  const db = new pg.Client({ connectionString: base.DATABASE_URL })
  await db.connect()
  // A history, as a service that has run for a while has: HISTORY events over the last 3 days,
  // each delivered to the 5 endpoints (the change feed, the delivery log, the consumer's ids).
  await db.query(
    `WITH e AS (
       INSERT INTO webhooks.events (idempresa, id, seq, type, codalmacen, occurred_at, stored_at, data)
       SELECT 1, gen_random_uuid(), i, 'appointment.created', 'C1', t, t + interval '20 ms',
              jsonb_build_object('id', gen_random_uuid(), 'resource_type', 'appointment', 'codalmacen', 'C1',
                'version', 1, 'changes', '[]'::jsonb, 'url', '/api/appointments/' || i)
         FROM generate_series(1, $1::int) i,
              LATERAL (SELECT now() - interval '3 days' + i * interval '3 days' / $1::int AS t) x
       RETURNING id, stored_at),
     p AS (INSERT INTO webhooks.processed_events (event_id, processed_at) SELECT id, stored_at FROM e)
     INSERT INTO webhooks.deliveries (idempresa, id, endpoint_id, event_id, event_type, status, attempts,
       last_status_code, last_duration_ms, created_at, succeeded_at)
     SELECT 1, gen_random_uuid(), ep, e.id, 'appointment.created', 'succeeded', 1, 200, 2, e.stored_at,
            e.stored_at + interval '50 ms'
       FROM e CROSS JOIN unnest($2::uuid[]) ep`,
    [HISTORY, endpoints.map((e) => e.id)],
  )
  await db.query('INSERT INTO webhooks.feed_heads (idempresa, last_seq) VALUES (1, $1)', [HISTORY])
  // Autovacuum is off on this machine: statistics (and, between phases, the dead rows a phase's
  // updates leave) as autovacuum would keep them.
  const vacuum = () =>
    db.query(
      'VACUUM ANALYZE webhooks.endpoints, webhooks.events, webhooks.deliveries, webhooks.processed_events, webhooks.feed_heads',
    )
  await vacuum()

  // The publisher: as the appointments service publishes, its broker user, through the platform's Amqp.
  const amqp = new Amqp({
    url: serviceEnv('appointments', env).AMQP_URL,
    log: createLogger({ service: 'bench', level: 'warn' }),
    name: 'bench',
  })
  await amqp.start()
  const event = () => {
    const id = randomUUID()
    return makeEvent({
      type: 'appointment.created',
      source: 'clinic/appointments',
      subject: id,
      companyId: 1,
      codalmacen: 'C1',
      data: {
        id,
        patient_id: randomUUID(),
        codalmacen: 'C1',
        practitioner: 'dra-bench',
        starts_at: '2026-12-01T09:00:00.000Z',
        ends_at: '2026-12-01T09:20:00.000Z',
        time_zone: 'Europe/Madrid',
        status: 'scheduled',
        checked_in_at: null,
        version: 1,
      },
    })
  }
  const publish = (n) => amqp.publish(Array.from({ length: n }, event))
  /** The receivers' counters (distinct deliveries, requests, repeats, bad signatures) over `which`. */
  const counters = async (which = [...endpoints.keys()]) => {
    const c = await rpc('counts')
    const sum = (k) => which.reduce((s, i) => s + c[i][k], 0)
    return {
      unique: sum('unique'),
      requests: sum('requests'),
      duplicates: sum('duplicates'),
      bad: sum('bad'),
    }
  }
  const received = async (which) => (await counters(which)).unique
  const countersSince = async (before, which) => {
    const now = await counters(which)
    return Object.fromEntries(Object.keys(now).map((k) => [k, now[k] - before[k]]))
  }
  /** Until the receivers `which` have `target` distinct deliveries, or `timeoutS`; the seconds waited. */
  const until = async (target, which, timeoutS) => {
    const t = performance.now()
    while ((await received(which)) < target && performance.now() - t < timeoutS * 1000) await sleep(100)
    return (performance.now() - t) / 1000
  }

  // Warm-up: the queue bound, the worker's sockets open, the code hot.
  for (let i = 0; i < 10; i++) await publish(20)
  await until(200 * ENDPOINTS, undefined, 60)
  if ((await received()) < 200 * ENDPOINTS)
    throw new Error(`warm-up: ${await received()} of ${200 * ENDPOINTS} delivered`)

  const statements = async () => {
    const body = await (await fetch(`http://127.0.0.1:${stack.ports.webhooks}/metrics`)).text()
    return [...body.matchAll(/^db_statements_total(?:\{[^}]*\})? (\d+)/gm)].reduce(
      (s, m) => s + Number(m[1]),
      0,
    )
  }
  /** Transactions committed in this database, WAL syncs (the whole server), claims and their time. */
  const dbCounters = async () => {
    const { rows } = await db.query(
      `SELECT (SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()) AS commits,
              (SELECT wal_sync FROM pg_stat_wal) AS wal_syncs,
              (SELECT coalesce(sum(calls), 0) FROM pg_stat_user_functions WHERE funcname = 'claim_deliveries') AS claims,
              (SELECT coalesce(sum(total_time), 0) FROM pg_stat_user_functions WHERE funcname = 'claim_deliveries') AS claim_ms`,
    )
    return Object.fromEntries(Object.entries(rows[0]).map(([k, v]) => [k, Number(v)]))
  }
  const label = (q) => {
    const known = [
      [/claim_deliveries/, 'claim_deliveries()'],
      [/^update "deliveries"/i, 'record: UPDATE deliveries'],
      [/^update "endpoints"/i, 'record: UPDATE endpoints'],
      [/^insert into "events"/i, 'store: INSERT events'],
      [/INSERT INTO deliveries/, 'store: INSERT deliveries'],
      [/feed_heads/, 'store: feed_heads'],
      [/processed_events/, 'consumer: processed_events'],
      [/pg_notify/, 'pg_notify'],
      [/from "endpoints"/i, 'store: SELECT endpoints'],
      [/set_config/, 'set_config (company)'],
      [/outbox/, 'outbox relay'],
    ]
    return known.find(([re]) => re.test(q))?.[1] ?? q.replace(/\s+/g, ' ').trim().slice(0, 30)
  }
  const dbSampler = () => sampleBackends(mon, datname, { label, cpu: true })
  const benchCpu = () => {
    const u = process.cpuUsage()
    return (u.user + u.system) / 1e6
  }
  const cpuNow = async () => ({
    wall: performance.now() / 1000,
    webhooks: cpuSeconds(procs.webhooks.pid),
    gateway: cpuSeconds(procs.gateway.pid),
    receivers: cpuSeconds(child.pid),
    publisher: benchCpu(),
    rabbitmq: cpuOf(pidsOf('beam.smp')),
    statements: await statements(),
  })
  /**
   * Starts measuring a phase; the function it returns ends it, given the deliveries the phase made:
   * CPU per process (seconds and µs per delivery), statements, commits, claims and WAL syncs per
   * delivery, what the backends did, and what else the machine was doing.
   */
  const phase = async (which = all) => {
    const before = {
      cpu: await cpuNow(),
      counters: await counters(which),
      db: await dbCounters(),
      machine: machineCpu(),
    }
    const sampler = await dbSampler()
    return async (deliveries) => {
      const cpu = await cpuNow()
      const machineNow = machineCpu()
      const d = Object.fromEntries(Object.keys(before.cpu).map((k) => [k, cpu[k] - before.cpu[k]]))
      const backends = await sampler()
      await sleep(1100) // the backends' statistics reach pg_stat_* within a second
      const dbNow = await dbCounters()
      const dd = Object.fromEntries(Object.keys(dbNow).map((k) => [k, dbNow[k] - before.db[k]]))
      const us = (sec) => Math.round((sec / deliveries) * 1e6)
      const ours = d.webhooks + d.gateway + d.receivers + d.publisher + d.rabbitmq + backends.cpu
      const machineCores =
        ((machineNow.busy - before.machine.busy) / (machineNow.total - before.machine.total)) *
        os.cpus().length
      return {
        wall: d.wall,
        counters: await countersSince(before.counters, which),
        backends,
        perDelivery: {
          webhooks: us(d.webhooks),
          postgres: us(backends.cpu),
          rabbitmq: us(d.rabbitmq),
          receivers: us(d.receivers),
          publisher: us(d.publisher),
        },
        statements: d.statements / deliveries,
        commits: dd.commits / deliveries,
        claims: dd.claims / deliveries,
        claimMs: dd.claims ? dd.claim_ms / dd.claims : NaN,
        walSyncs: dd.wal_syncs / deliveries,
        busy: { webhooks: d.webhooks / d.wall, postgres: backends.cpu / d.wall },
        machine: { cores: machineCores, other: Math.max(0, machineCores - ours / d.wall) },
      }
    }
  }
  const deliveryStates = async (since) =>
    (
      await db.query(
        `SELECT status, count(*)::int AS n, sum(attempts - 1)::int AS retries, min(last_error) AS an_error
           FROM webhooks.deliveries WHERE created_at >= $1 GROUP BY status ORDER BY status`,
        [since],
      )
    ).rows

  // 0. The bare baseline: a node:http client posting the same signed bodies to the same receivers.
  const bare = await (async () => {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 16, timeout: 30_000 })
    const data = { id: randomUUID(), resource_type: 'appointment', codalmacen: 'C1', version: 1, changes: [] }
    const post = (ep) =>
      new Promise((resolve, reject) => {
        const id = randomUUID()
        const body = JSON.stringify({
          type: 'appointment.created',
          timestamp: new Date().toISOString(),
          data,
        })
        const ts = Math.floor(Date.now() / 1000)
        const req = http.request(ep.url, {
          method: 'POST',
          agent,
          headers: {
            'content-type': 'application/json',
            'content-length': Buffer.byteLength(body),
            'webhook-id': id,
            'webhook-timestamp': String(ts),
            'webhook-signature': HOOK_SIGNATURE(ep.key, id, ts, body),
          },
        })
        req.on('response', (res) => (res.resume(), res.on('end', resolve)))
        req.on('error', reject)
        req.end(body)
      })
    const from = Date.now()
    const done = await phase()
    let next = 0
    await Promise.all(
      Array.from({ length: 4 * ENDPOINTS }, async () => {
        while (next < BARE) await post(endpoints[next++ % ENDPOINTS])
      }),
    )
    const to = Date.now() + 1
    const m = await done(BARE)
    agent.destroy()
    return { ...(await rpc('stats', { from, to, endpoints: all })), m, rate: BARE / m.wall }
  })()

  // 1. Fan-out: EVENTS events at once, each to the 5 endpoints.
  const fan = await (async () => {
    const expected = EVENTS * ENDPOINTS
    const start = await received()
    const since = new Date()
    const from = Date.now()
    const done = await phase()
    for (let sent = 0; sent < EVENTS; sent += 250) await publish(Math.min(250, EVENTS - sent))
    const publishedS = (Date.now() - from) / 1000
    const to = Date.now() + 1
    // When the last event was stored (the consumer's side), then the deliveries.
    let storedS = null
    const t = performance.now()
    while (performance.now() - t < FANOUT_TIMEOUT_S * 1000) {
      if (storedS === null) {
        const { rows } = await db.query(
          'SELECT count(*)::int AS n FROM webhooks.events WHERE stored_at >= $1',
          [since],
        )
        if (rows[0].n >= EVENTS) storedS = (Date.now() - from) / 1000
      }
      if ((await received()) - start >= expected) break
      await sleep(250)
    }
    const m = await done(expected)
    const s = await rpc('stats', { from, to, endpoints: all })
    const seconds = (s.last - from) / 1000
    return {
      ...s,
      m,
      expected,
      publishedS,
      storedS,
      seconds,
      rate: s.n / seconds,
      states: await deliveryStates(since),
    }
  })()
  await vacuum()

  /** RATE events/s for STEADY_S s, until the receivers `healthy` have them all; stats of each group. */
  const steady = async (healthy, groups) => {
    const since = new Date()
    const start = await received(healthy)
    const from = Date.now()
    const done = await phase(healthy)
    let sent = 0
    let late = 0
    while (Date.now() - from < STEADY_S * 1000) {
      const due = Math.floor(((Date.now() - from) / 1000) * RATE) - sent
      if (due > 0) {
        if (due > RATE / 50) late++
        await publish(due)
        sent += due
      }
      await sleep(5)
    }
    const to = Date.now() + 1
    const drainS = await until(start + sent * healthy.length, healthy, 60)
    const m = await done(sent * healthy.length)
    const out = { sent, late, drainS, m, states: await deliveryStates(since) }
    for (const [name, which] of Object.entries(groups)) {
      const s = await rpc('stats', { from, to, endpoints: which })
      out[name] = { ...s, rate: s.n / ((s.last - from) / 1000) }
    }
    return out
  }
  const healthy4 = all.slice(0, ENDPOINTS - 1)
  const hung = ENDPOINTS - 1
  const s2 = await steady(all, { all, four: healthy4 })
  await vacuum()
  await rpc('hang', { index: hung, ms: HANG_MS })
  const hungBefore = await counters([hung])
  const s3 = await steady(healthy4, { four: healthy4 })
  const hungRequests = (await countersSince(hungBefore, [hung])).requests

  const ms = (v) => (Number.isFinite(v) ? `${Math.round(v).toLocaleString('en')} ms` : '-')
  const n0 = (v) => Math.round(v).toLocaleString('en')
  const pct = (v) => `${Math.round(v * 100)}%`
  const cpuRow = (name, m, per) =>
    `| ${name} | ${per} | ${m.perDelivery.webhooks} | ${m.perDelivery.postgres} | ${m.perDelivery.rabbitmq} | ${m.perDelivery.receivers} | ${m.perDelivery.publisher} | ${m.statements.toFixed(2)} / ${m.commits.toFixed(2)} / ${m.claims.toFixed(2)} / ${m.walSyncs.toFixed(2)} | ${Number.isFinite(m.claimMs) ? m.claimMs.toFixed(1) : '-'} | ${pct(m.busy.webhooks)} / ${pct(m.busy.postgres)} | ${m.machine.cores.toFixed(2)} (${m.machine.other.toFixed(2)}) |`
  const dbRow = (name, m) =>
    `| ${name} | ${m.backends.active.toFixed(2)}: ${m.backends.topActive || '-'} | ${m.backends.topWaits || '-'} | ${m.backends.idleInTx.toFixed(2)}: ${m.backends.topIdleInTx || '-'} |`
  const states = (rows) =>
    rows
      .map(
        (r) =>
          `${r.status} ${r.n}${r.retries > 0 ? ` (${r.retries} retries)` : ''}${r.an_error ? `, e.g. "${r.an_error}"` : ''}`,
      )
      .join(', ')
  const status = (ok) => (ok ? 'met' : 'gap')
  const checks = [bare.m, fan.m, s2.m, s3.m].map((m) => m.counters)

  record(
    'webhooks',
    `# webhooks: fan-out, steady load, a hanging endpoint

${machine()}; load average ${load0.toFixed(2)} at the start, ${os.loadavg()[0].toFixed(2)} at the end. Gateway
and webhooks from the build (LOG_LEVEL=warn, WEBHOOKS_CONCURRENCY 64, WEBHOOKS_ENDPOINT_CONCURRENCY
4), a database and a RabbitMQ vhost of their own. Events \`appointment.created\` of company 1,
published by this process through the platform's Amqp, signed with the appointments service's key;
${ENDPOINTS} endpoints (\`["*"]\`) on ${ENDPOINTS} node:http receivers in a child process that verify every
signature. Latency: the receiver's arrival minus the payload's \`timestamp\` (the event's \`time\`,
set when it is published; first arrival of each delivery). \`VACUUM ANALYZE\` of the webhooks tables
after seeding a history of ${n0(HISTORY)} events delivered to the 5 endpoints over 3 days
(${n0(HISTORY * ENDPOINTS)} deliveries), and between phases (autovacuum is off here).

| measure | target | measured | status |
| --- | ---: | ---: | --- |
| bare node:http client -> the same receivers (${n0(BARE)} POSTs, 4 in flight per receiver) | | ${n0(bare.rate)}/s, p50 ${ms(bare.p50)}, p99 ${ms(bare.p99)} | baseline |
| fan-out: ${n0(EVENTS)} events x ${ENDPOINTS} endpoints, deliveries/s end to end | >= 500/s | ${n0(fan.rate)}/s: ${n0(fan.n)} of ${n0(fan.expected)} in ${fan.seconds.toFixed(1)} s (bare ${(bare.rate / fan.rate).toFixed(1)}x that) | ${status(fan.rate >= 500 && fan.n === fan.expected)} |
| fan-out: event time -> receiver p50 / p99 | | ${ms(fan.p50)} / ${ms(fan.p99)} (published in ${fan.publishedS.toFixed(1)} s, all stored by ${fan.storedS?.toFixed(1) ?? '-'} s) | |
| steady ${RATE} events/s (${n0(RATE * ENDPOINTS)} deliveries/s) for ${STEADY_S} s, p50 / p99 | p99 < 1 s | ${ms(s2.all.p50)} / ${ms(s2.all.p99)} (max ${ms(s2.all.max)}; ${n0(s2.all.n)} of ${n0(s2.sent * ENDPOINTS)} at ${n0(s2.all.rate)}/s; the last ${s2.drainS.toFixed(1)} s after the load) | ${status(s2.all.p99 < 1000 && s2.all.n === s2.sent * ENDPOINTS)} |
| the same, the 4 receivers that stay healthy in 3, p50 / p99 | | ${ms(s2.four.p50)} / ${ms(s2.four.p99)} | |
| steady, receiver 5 hangs ${HANG_MS / 1000} s per request: the 4 healthy, p50 / p99 | p99 as in 2 | ${ms(s3.four.p50)} / ${ms(s3.four.p99)} (max ${ms(s3.four.max)}; ${n0(s3.four.n)} of ${n0(s3.sent * 4)} at ${n0(s3.four.rate)}/s; the last ${s3.drainS.toFixed(1)} s after the load) | ${status(s3.four.p99 < 1000 && s3.four.p99 <= Math.max(1.5 * s2.four.p99, s2.four.p99 + 50))} |

Receivers: requests / repeats / bad signatures, bare ${checks[0].requests} / ${checks[0].duplicates} / ${checks[0].bad}, fan-out
${checks[1].requests} / ${checks[1].duplicates} / ${checks[1].bad}, steady ${checks[2].requests} / ${checks[2].duplicates} / ${checks[2].bad}, with one hanging (the 4 healthy)
${checks[3].requests} / ${checks[3].duplicates} / ${checks[3].bad}; the hanging one got ${hungRequests} requests in phase 3 (at most 4 at a time).
Steady publisher: ${s2.sent} and ${s3.sent} events; publishing ticks more than 20 ms late: ${s2.late + s3.late}.
Deliveries by status after each phase: fan-out ${states(fan.states)}; steady ${states(s2.states)};
one hanging ${states(s3.states)}.

Per delivery: CPU in µs (user+system from /proc over the phase and until the last delivery;
PostgreSQL the backends of this database from pg_stat_activity, without the WAL writer; RabbitMQ its
whole beam.smp), webhooks' SQL statements (db_statements_total, BEGIN/COMMIT included), the
database's commits (pg_stat_database), \`claim_deliveries\` calls (pg_stat_user_functions) and WAL
syncs (pg_stat_wal, the whole server); the mean claim; webhooks and its backends busy (CPU s per s);
the machine's busy cores (/proc/stat), in brackets what was not this bench's processes:

| phase | deliveries | webhooks | PostgreSQL | RabbitMQ | receivers | publisher | statements / commits / claims / WAL syncs | ms per claim | busy: webhooks / PostgreSQL | machine cores (other) |
| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |
${cpuRow('bare node:http', bare.m, n0(BARE))}
${cpuRow('fan-out', fan.m, n0(fan.expected))}
${cpuRow('steady', s2.m, n0(s2.sent * ENDPOINTS))}
${cpuRow('steady, one hanging', s3.m, n0(s3.sent * 4))}

What the database backends were doing (pg_stat_activity every 100 ms, backends per sample):

| phase | active, in | waiting on | idle in transaction, after |
| --- | --- | --- | --- |
${dbRow('fan-out', fan.m)}
${dbRow('steady', s2.m)}
${dbRow('steady, one hanging', s3.m)}
`,
  )

  await amqp.close()
  await db.end()
  await mon.end()
  await stack.stop()
  child.kill()
  process.exit(0)
}
