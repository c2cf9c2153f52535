// Availability and holds: one center, 50 practitioners with 20-minute slots, 10,000
// booked appointments over the two weeks from next Monday; a week's free slots through the gateway,
// and holds + bookings racing for the same slots. Figures as ratios against a bare node:http
// server measured in the same run (the machine is shared and noisy).
// Run: node bench/availability.mjs after `npm run build` (seeding takes a few seconds). DURATION: seconds
// per read row (8); BENCH_SERVICES_ROOT: the build of another checkout (lib.mjs), for before/after runs.
import http from 'node:http'
import { createRequire } from 'node:module'
import { join } from 'node:path'
import pg from 'pg'
import {
  ROOT,
  behindGateway,
  benchTenant,
  cpuSeconds,
  databaseBackendCpu,
  freePort,
  patientsSayingYes,
  load,
  machine,
  record,
  stackDbRole,
} from './lib.mjs'

const CENTER = 'ALM1'
const TZ = 'Europe/Madrid'
const PRACTITIONERS = 50
const SLOT_MINUTES = 20
const BOOKED = 10_000
const CANCELLED = 500
const HOLDS = 100 // live; as many expired ones, which block nothing
// Working hours of every practitioner, Monday to Friday at the one center: 33 slots a day.
const WINDOWS = [
  ['08:00', '14:00'],
  ['15:00', '20:00'],
]
// The race: every slot is asked for by this many requests in a row, half holds, half bookings.
const PER_SLOT = 8
const RACE_CONNECTIONS = 32
const RACE_SECONDS = 10
// Seconds of each read row (and of the bare server's).
const DURATION = Number(process.env.DURATION ?? 8)

const { env, token } = await benchTenant('clinic_bench_availability', {
  services: ['appointments'],
  centers: [CENTER],
})

// A booking asks the patients service whether the patient exists: a stand-in that always says yes.
const patients = await patientsSayingYes()

const db = new pg.Client({ connectionString: env.DATABASE_URL })
await db.connect()

// Next Monday in the practitioners' zone: week 1 (measured) and week 2 hold the bookings, week 3
// is empty for the race. All of it in the future, so "minus the past" removes nothing.
const { rows: weekRows } = await db.query(
  `SELECT m::text AS monday, (m::timestamp AT TIME ZONE $1) AS week_from,
          ((m + 7)::timestamp AT TIME ZONE $1) AS week_to
     FROM (SELECT (date_trunc('week', now() AT TIME ZONE $1) + interval '7 days')::date AS m) s`,
  [TZ],
)
const { monday } = weekRows[0]
const week = { from: weekRows[0].week_from.toISOString(), to: weekRows[0].week_to.toISOString() }

const started = Date.now()
const hours = []
for (let weekday = 1; weekday <= 5; weekday++)
  for (const [start, end] of WINDOWS) hours.push({ codalmacen: CENTER, weekday, start, end })
await db.query(
  `INSERT INTO appointments.practitioners (idempresa, id, name, time_zone, slot_minutes, working_hours)
   SELECT 1, 'dr-' || lpad(n::text, 2, '0'), 'Dr. Bench ' || n, $2, $3, $4::jsonb
     FROM generate_series(0, $1::integer - 1) n`,
  [PRACTITIONERS, TZ, SLOT_MINUTES, JSON.stringify(hours)],
)
// The slot grid of three weeks, computed here on its own (local times turned into instants in the
// zone), against which the service's answers are checked. rank: a fixed shuffle of weeks 1-2.
await db.query(
  `CREATE TEMP TABLE grid AS
   SELECT g.*, CASE WHEN g.day < 14 THEN row_number() OVER (PARTITION BY g.day < 14 ORDER BY md5(g.practitioner || g.starts_at::text)) END AS rank
     FROM (SELECT 'dr-' || lpad(n::text, 2, '0') AS practitioner, d AS day,
                  l AT TIME ZONE $2 AS starts_at, (l AT TIME ZONE $2) + make_interval(mins => $3) AS ends_at
             FROM generate_series(0, $4::integer - 1) n, generate_series(0, 20) d,
                  jsonb_to_recordset($5::jsonb) AS w (s time, e time),
                  LATERAL generate_series($1::date + d + w.s, $1::date + d + w.e - make_interval(mins => $3),
                                          make_interval(mins => $3)) l
            WHERE extract(isodow FROM $1::date + d) <= 5) g`,
  [monday, TZ, SLOT_MINUTES, PRACTITIONERS, JSON.stringify(WINDOWS.map(([s, e]) => ({ s, e })))],
)
// 10,000 booked (the calendar trigger gives each its row; each its own patient), then 500 cancelled
// ones on other slots (they free them), live holds and expired holds.
await db.query(
  `INSERT INTO appointments.appointments
     (idempresa, id, patient_id, codalmacen, practitioner, starts_at, ends_at, status, cancellation_reason)
   SELECT 1, gen_random_uuid(), gen_random_uuid(), $1, practitioner, starts_at, ends_at,
          CASE WHEN rank > $2 THEN 'cancelled' WHEN rank % 5 = 0 THEN 'confirmed' ELSE 'scheduled' END,
          CASE WHEN rank > $2 THEN 'bench' END
     FROM grid WHERE rank <= $2::integer + $3::integer`,
  [CENTER, BOOKED, CANCELLED],
)
await db.query(
  `INSERT INTO appointments.calendar (idempresa, id, kind, practitioner, codalmacen, during, expires_at)
   SELECT 1, gen_random_uuid(), 'hold', practitioner, $1, tstzrange(starts_at, ends_at),
          CASE WHEN rank <= $2::integer + $3::integer + $4::integer THEN now() + interval '1 day'
               ELSE now() - interval '1 minute' END
     FROM grid WHERE rank > $2::integer + $3::integer AND rank <= $2::integer + $3::integer + 2 * $4::integer`,
  [CENTER, BOOKED, CANCELLED, HOLDS],
)
// Time off in week 1: five practitioners away on Wednesday, one on Monday morning.
await db.query(
  `INSERT INTO appointments.time_off (idempresa, id, practitioner, starts_at, ends_at, reason)
   SELECT 1, gen_random_uuid(), 'dr-0' || n, ($1::date + 2)::timestamp AT TIME ZONE $2,
          ($1::date + 3)::timestamp AT TIME ZONE $2, 'bench'
     FROM generate_series(0, 4) n
   UNION ALL
   SELECT 1, gen_random_uuid(), 'dr-05', ($1::date + time '08:00') AT TIME ZONE $2,
          ($1::date + time '11:00') AT TIME ZONE $2, 'bench'`,
  [monday, TZ],
)
const seedSeconds = (Date.now() - started) / 1000
// Autovacuum is off on this machine: fresh statistics, as autovacuum would give a real database.
for (const table of ['appointments', 'calendar', 'practitioners', 'time_off'])
  await db.query(`ANALYZE appointments.${table}`)
const counts = (
  await db.query(
    `SELECT (SELECT count(*) FROM appointments.appointments)::int AS appointments,
            (SELECT count(*) FROM appointments.calendar WHERE kind = 'appointment')::int AS booked,
            (SELECT count(*) FROM grid WHERE day < 7)::int AS week_grid,
            (SELECT count(*) FROM grid WHERE day < 7 AND rank <= $1)::int AS week_booked`,
    [BOOKED],
  )
).rows[0]
if (counts.booked !== BOOKED)
  throw new Error(`calendar has ${counts.booked} appointments, expected ${BOOKED}`)

/** The free slots of week 1 as this script computes them (grid minus live claims, time off, past). */
async function expectedFree(from, to) {
  const { rows } = await db.query(
    `SELECT g.practitioner, g.starts_at, g.ends_at FROM grid g
      WHERE g.starts_at >= $1 AND g.starts_at < $2 AND g.starts_at >= now()
        AND NOT EXISTS (SELECT 1 FROM appointments.calendar c
                         WHERE c.idempresa = 1 AND c.practitioner = g.practitioner
                           AND c.during && tstzrange(g.starts_at, g.ends_at)
                           AND (c.expires_at IS NULL OR c.expires_at > now()))
        AND NOT EXISTS (SELECT 1 FROM appointments.time_off t
                         WHERE t.idempresa = 1 AND t.practitioner = g.practitioner
                           AND tstzrange(t.starts_at, t.ends_at) && tstzrange(g.starts_at, g.ends_at))
      ORDER BY g.starts_at, g.practitioner`,
    [from, to],
  )
  return rows.map(
    (r) => `${r.practitioner} ${CENTER} ${r.starts_at.toISOString()} ${r.ends_at.toISOString()}`,
  )
}
const slotKey = (s) => `${s.practitioner} ${s.codalmacen} ${s.starts_at} ${s.ends_at}`
const free = await expectedFree(week.from, week.to)

// The statement the service sends, built by its own code from the build (nothing hand-copied), then
// explained and timed as the service role under row-level security (BENCH_SERVICES_ROOT: the build of
// another checkout, the one whose services run).
const service = createRequire(
  join(process.env.BENCH_SERVICES_ROOT ?? ROOT, 'services', 'appointments', 'package.json'),
)
const { findAvailability } = service('./dist/domain/availability.js')
const { availabilityStatement, stretches } = service('./dist/db/repositories/calendar-sql.js')
if (typeof availabilityStatement !== 'function')
  throw new Error('services/appointments exports no availabilityStatement: nothing to explain')
const sqlOnly = service('knex')({ client: 'pg' }) // builds SQL, never connects
// The domain turns the query into a filter, the repository adds its clock and builds the SQL.
let filter
await findAvailability(
  {
    auth: { companyId: 1, companyCenters: [CENTER], allowedCenters: null },
    log: { info() {}, warn() {} },
    requestId: 'bench',
  },
  { availability: async (_company, f) => ((filter = f), []) },
  { codalmacen: CENTER, from: week.from, to: week.to },
)
// The repository reads stretch after stretch (a day, two, four...) until it has a page: the first
// stretch is the statement a first page costs.
const first = stretches(filter.from, filter.to).next().value
const { sql: availabilitySql, bindings } = availabilityStatement(sqlOnly, 1, {
  ...filter,
  ...first,
  now: new Date(),
})
  .toSQL()
  .toNative()
await db.query('BEGIN')
await db.query(`SET LOCAL ROLE ${stackDbRole('clinic_appointments_app', env.DB_ROLE_PREFIX)}`)
await db.query('SET LOCAL search_path TO appointments, public')
await db.query(`SELECT set_config('app.idempresa', '1', true)`)
const plan = (await db.query(`EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) ${availabilitySql}`, bindings)).rows
  .map((r) => r['QUERY PLAN'])
  .join('\n')
/** Median ms of `runs` calls of `run`, from this script's connection. */
async function medianMs(runs, run) {
  const ms = []
  for (let i = 0; i < runs; i++) {
    const t = process.hrtime.bigint()
    await run()
    ms.push(Number(process.hrtime.bigint() - t) / 1e6)
  }
  return quantile(ms, 0.5)
}
// Unnamed (parsed and planned on every call), then as a named prepared statement (as the service
// runs it since 2026-11-27) with each plan_cache_mode: a custom plan made for every call's values,
// the generic plan made once (what "auto" picks after five calls when it costs no more), and auto.
// Rounds alternate, so a busy moment of the machine does not fall on one of them only.
const named = { name: 'bench_availability', text: availabilitySql, values: bindings }
const statementMedians = { unnamed: [], force_custom_plan: [], force_generic_plan: [], auto: [] }
const planCounts = async () =>
  (
    await db.query(`SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE name = $1`, [
      named.name,
    ])
  ).rows[0] ?? { generic_plans: 0, custom_plans: 0 }
const planCache = { generic_plans: 0, custom_plans: 0 }
for (let round = 0; round < 3; round++)
  for (const mode of Object.keys(statementMedians)) {
    await db.query(`SET LOCAL plan_cache_mode = ${mode === 'unnamed' ? 'auto' : mode}`)
    const before = await planCounts()
    statementMedians[mode].push(
      await medianMs(20, () =>
        db.query(mode === 'unnamed' ? { text: availabilitySql, values: bindings } : named),
      ),
    )
    if (mode !== 'auto') continue
    const after = await planCounts()
    planCache.generic_plans += after.generic_plans - before.generic_plans
    planCache.custom_plans += after.custom_plans - before.custom_plans
  }
const statementMedian = quantile(statementMedians.unnamed, 0.5)
const statementMedianOf = (mode) => quantile(statementMedians[mode], 0.5)
// The generic plan itself, through SQL EXECUTE of the same prepared statement (its values as literals).
const literal = (v) =>
  v === null
    ? 'NULL'
    : db.escapeLiteral(Array.isArray(v) ? `{${v.map((x) => `"${x}"`).join(',')}}` : String(v))
await db.query('SET LOCAL plan_cache_mode = force_generic_plan')
const genericPlan = (
  await db.query(
    `EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) EXECUTE ${named.name}(${bindings.map(literal).join(', ')})`,
  )
).rows
  .map((r) => r['QUERY PLAN'])
  .join('\n')
await db.query('ROLLBACK')

const { api, procs, stop } = await behindGateway('appointments', {
  ...env,
  PATIENTS_URL: patients.url,
})
process.on('exit', stop) // also when a check below throws
const headers = { 'x-service-token': token }
const get = async (path) => {
  const r = await fetch(api + path, { headers })
  const body = await r.json()
  if (r.status !== 200) throw new Error(`GET ${path}: ${r.status} ${JSON.stringify(body)}`)
  return body.data
}
const query = (o) => {
  const q = new URLSearchParams({ codalmacen: CENTER, from: o.from ?? week.from, to: o.to ?? week.to })
  for (const p of o.practitioners ?? []) q.append('practitioner', p)
  if (o.limit) q.set('limit', String(o.limit))
  return `/appointments/availability?${q}`
}

// Correctness first: the whole week in two-hour windows (each under the 500 limit) is exactly the
// free grid computed above; the first page, limit=1 and a practitioner filter are its prefixes.
const answered = []
for (let t = Date.parse(week.from); t < Date.parse(week.to); t += 2 * 3600_000)
  answered.push(
    ...(
      await get(
        query({ from: new Date(t).toISOString(), to: new Date(t + 2 * 3600_000).toISOString(), limit: 500 }),
      )
    ).map(slotKey),
  )
const mismatch = firstDifference(answered, free)
if (mismatch) throw new Error(`availability differs from the free grid: ${mismatch}`)
const firstPage = (await get(query({}))).map(slotKey)
if (firstDifference(firstPage, free.slice(0, 100)))
  throw new Error('the first page is not the 100 earliest free slots')
const next = (await get(query({ limit: 1 }))).map(slotKey)
if (firstDifference(next, free.slice(0, 1))) throw new Error('limit=1 is not the earliest free slot')
const five = ['dr-03', 'dr-05', 'dr-17', 'dr-31', 'dr-49']
const fiveAnswer = (await get(query({ practitioners: five }))).map(slotKey)
if (firstDifference(fiveAnswer, free.filter((k) => five.includes(k.split(' ')[0])).slice(0, 100)))
  throw new Error('practitioner=... is not those practitioners’ earliest free slots')

/** CPU of each process over `work` (returning how many requests it made), in us per request. */
async function cpuPerRequest(work) {
  const before = {
    gw: cpuSeconds(procs.gateway.pid),
    svc: cpuSeconds(procs.service.pid),
    backends: await databaseBackendCpu(db),
    self: process.cpuUsage(),
  }
  const out = await work()
  const us = (seconds) => (out.requests ? ((seconds / out.requests) * 1e6).toFixed(0) : '-')
  const self = process.cpuUsage(before.self)
  let backends = 0
  for (const [pid, seconds] of await databaseBackendCpu(db))
    backends += seconds - (before.backends.get(pid) ?? 0)
  out.cpu = [
    us(cpuSeconds(procs.gateway.pid) - before.gw),
    us(cpuSeconds(procs.service.pid) - before.svc),
    us(backends),
    us((self.user + self.system) / 1e6),
  ]
  return out
}

// A bare node:http server answering the first page's very bytes: the machine's ceiling right now.
const pageBody = JSON.stringify({ data: (await get(query({}))).slice(0) })
const barePort = await freePort()
const bare = http
  .createServer((req, res) => {
    req.resume()
    res.writeHead(req.method === 'POST' ? 201 : 200, { 'content-type': 'application/json' })
    res.end(req.method === 'POST' ? '{"id":"0"}' : pageBody)
  })
  .listen(barePort, '127.0.0.1')
const bareUrl = `http://127.0.0.1:${barePort}`

const reads = [
  { name: 'the week, every practitioner (100 slots)', path: query({}), connections: [8, 50] },
  { name: 'next available (`limit=1`)', path: query({ limit: 1 }), connections: [8] },
  { name: 'the week, 500 slots', path: query({ limit: 500 }), connections: [8] },
  { name: 'the week, 5 practitioners', path: query({ practitioners: five }), connections: [8] },
]
await load({ url: api + reads[0].path, headers, connections: 8, duration: 2 }) // warm-up
const bareRead = {}
for (const connections of [8, 50])
  bareRead[connections] = await load({ url: bareUrl, connections, duration: DURATION })
const readRows = []
const readCpu = []
let target
for (const r of reads)
  for (const connections of r.connections) {
    // A load that ends leaves its queued requests in the service: one request waits them out.
    await get(r.path)
    const out = await cpuPerRequest(async () => {
      const result = await load({ url: api + r.path, headers, connections, duration: DURATION })
      return { result, requests: result.requests.total }
    })
    const { result } = out
    if (!target) target = result
    readRows.push(
      `| ${r.name} | ${connections} | ${result.requests.average.toFixed(0)} | ${times(bareRead[connections].requests.average, result.requests.average)} | ${result.latency.p50} | ${result.latency.p99} | ${result.non2xx} | ${result.errors} |`,
    )
    readCpu.push(`| ${r.name} | ${connections} | ${out.cpu.join(' | ')} |`)
  }
const bareRows = [8, 50].map(
  (c) =>
    `| bare node:http, the same body | ${c} | ${bareRead[c].requests.average.toFixed(0)} | 1× | ${bareRead[c].latency.p50} | ${bareRead[c].latency.p99} | ${bareRead[c].non2xx} | ${bareRead[c].errors} |`,
)

// The race. Week 3's grid in the order a portal offers it (earliest first, then practitioner);
// request n asks for slot n / PER_SLOT, so each slot is wanted by PER_SLOT requests within a few ms,
// and RACE_CONNECTIONS / PER_SLOT slots are fought over at any moment. Even n: a hold; a hold that
// wins is booked at once with its hold_id (as a portal does). Odd n: a booking without a hold.
const raceSlots = (
  await db.query(
    `SELECT practitioner, starts_at, ends_at FROM grid WHERE day >= 14 ORDER BY starts_at, practitioner`,
  )
).rows.map((r) => ({
  practitioner: r.practitioner,
  starts_at: r.starts_at.toISOString(),
  ends_at: r.ends_at.toISOString(),
}))

/** `connections` keep-alive clients posting as fast as answers come, for `seconds`. */
async function race(base, connections, seconds, extraHeaders, first = 0) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: connections })
  const post = (path, body) =>
    new Promise((resolve, reject) => {
      const data = JSON.stringify(body)
      const t = process.hrtime.bigint()
      const req = http.request(
        `${base}${path}`,
        {
          method: 'POST',
          agent,
          headers: {
            ...extraHeaders,
            'content-type': 'application/json',
            'content-length': Buffer.byteLength(data),
          },
        },
        (res) => {
          const chunks = []
          res.on('data', (c) => chunks.push(c))
          res.on('end', () =>
            resolve({
              status: res.statusCode,
              text: Buffer.concat(chunks).toString(),
              ms: Number(process.hrtime.bigint() - t) / 1e6,
            }),
          )
        },
      )
      req.on('error', reject)
      req.end(data)
    })
  const s = {
    hold: { statuses: {}, ms: [] },
    book: { statuses: {}, ms: [] },
    convert: { statuses: {}, ms: [] },
    winners: new Map(),
    alternatives: 0,
    conflicts: 0,
    requests: 0,
    first,
    last: first,
    others: new Map(), // "kind status code: detail" -> how many
  }
  const note = (kind, r) => {
    s[kind].statuses[r.status] = (s[kind].statuses[r.status] ?? 0) + 1
    s[kind].ms.push(r.ms)
    s.requests++
    if (r.status !== 201 && r.status !== 409) {
      const body = parse(r.text)
      const what = `${kind} ${r.status} ${body?.code}: ${body?.detail ?? r.text.slice(0, 100)}`
      s.others.set(what, (s.others.get(what) ?? 0) + 1)
    }
  }
  let n = 0
  const end = Date.now() + seconds * 1000
  const worker = async () => {
    while (Date.now() < end) {
      const i = n++
      const at = first + Math.floor(i / PER_SLOT)
      const slot = raceSlots[at]
      if (!slot) return
      s.last = Math.max(s.last, at + 1)
      const body = { ...slot, codalmacen: CENTER }
      const kind = i % 2 === 0 ? 'hold' : 'book'
      const r =
        kind === 'hold'
          ? await post('/appointments/holds', body)
          : await post('/appointments', { ...body, patient_id: crypto.randomUUID() })
      note(kind, r)
      if (r.status === 201) s.winners.set(at, (s.winners.get(at) ?? 0) + 1)
      if (r.status === 409) {
        s.conflicts++
        if (parse(r.text)?.alternatives?.length > 0) s.alternatives++
      }
      if (kind === 'hold' && r.status === 201) {
        const hold = parse(r.text)
        note(
          'convert',
          await post('/appointments', { ...body, patient_id: crypto.randomUUID(), hold_id: hold?.id }),
        )
      }
    }
  }
  await Promise.all(Array.from({ length: connections }, worker))
  agent.destroy()
  return s
}

const bareRace = await race(bareUrl, RACE_CONNECTIONS, RACE_SECONDS / 2, {})
const warm = await race(api, 8, 1, headers) // warm-up, on the first slots
const r = await cpuPerRequest(() => race(api, RACE_CONNECTIONS, RACE_SECONDS, headers, warm.last))
const racePerSecond = r.requests / RACE_SECONDS
const bareRacePerSecond = bareRace.requests / (RACE_SECONDS / 2)
const count = (kind, status) => r[kind].statuses[status] ?? 0
const raced = count('hold', 201) + count('hold', 409) + count('book', 201) + count('book', 409)
const attempts = r.hold.ms.length + r.book.ms.length

// Every slot fought over has exactly one winner, and nothing in the calendar overlaps.
const doubleWinners = [...r.winners.values()].filter((w) => w > 1).length
const noWinner = r.last - r.first - r.winners.size
// What both races (warm-up and measured) left in week 3: their winning bookings and conversions,
// and no hold (each winning hold was converted).
const both = (kind, status) => count(kind, status) + (warm[kind].statuses[status] ?? 0)
const expectedRaced = both('book', 201) + both('convert', 201)
const checks = (
  await db.query(
    `SELECT
       (SELECT count(*) FROM appointments.calendar a JOIN appointments.calendar b
          ON a.idempresa = b.idempresa AND a.practitioner = b.practitioner AND a.id < b.id AND a.during && b.during)::int AS calendar_overlaps,
       (SELECT count(*) FROM appointments.appointments a JOIN appointments.appointments b
          ON a.idempresa = b.idempresa AND a.practitioner = b.practitioner AND a.id < b.id
         AND tstzrange(a.starts_at, a.ends_at) && tstzrange(b.starts_at, b.ends_at)
         AND a.status NOT IN ('cancelled', 'no_show') AND b.status NOT IN ('cancelled', 'no_show'))::int AS appointment_overlaps,
       (SELECT count(*) FROM appointments.appointments WHERE status NOT IN ('cancelled', 'no_show'))::int AS active,
       (SELECT count(*) FROM appointments.calendar WHERE kind = 'appointment')::int AS calendar_appointments,
       (SELECT count(*) FROM appointments.calendar c WHERE lower(c.during) >= $1 AND c.kind = 'appointment')::int AS raced_appointments,
       (SELECT count(*) FROM appointments.calendar c WHERE lower(c.during) >= $1 AND c.kind = 'hold')::int AS raced_holds`,
    [raceSlots[0].starts_at],
  )
).rows[0]
stop()
bare.close()
patients.server.close()
await db.end()

const pct = (part) => `${((part / attempts) * 100).toFixed(1)}%`
const p = (ms, q) => (ms.length ? quantile(ms, q).toFixed(0) : '-')
const raceRow = (kind, name) =>
  `| ${name} | ${r[kind].ms.length} | ${count(kind, 201)} | ${count(kind, 409)} | ${
    r[kind].ms.length - count(kind, 201) - count(kind, 409)
  } | ${p(r[kind].ms, 0.5)} | ${p(r[kind].ms, 0.99)} |`
const problems = [
  doubleWinners && `${doubleWinners} slots answered 201 twice`,
  noWinner && `${noWinner} slots answered no 201`,
  checks.calendar_overlaps && `${checks.calendar_overlaps} overlapping calendar rows`,
  checks.appointment_overlaps && `${checks.appointment_overlaps} overlapping active appointments`,
  checks.active !== checks.calendar_appointments &&
    `${checks.active} active appointments but ${checks.calendar_appointments} in the calendar`,
  count('convert', 201) !== r.convert.ms.length &&
    `${r.convert.ms.length - count('convert', 201)} holds not converted`,
  checks.raced_appointments !== expectedRaced &&
    `${checks.raced_appointments} appointments in week 3, but ${expectedRaced} bookings answered 201`,
  checks.raced_holds !== 0 && `${checks.raced_holds} holds left in week 3`,
  raced !== attempts && `${attempts - raced} answers neither 201 nor 409`,
  ...[...r.others].map(([what, n]) => `${n} × ${what}`),
].filter(Boolean)

const targetMet = target.latency.p50 < 20
record(
  'availability',
  `# Availability and holds: one center, 50 practitioners, 10,000 booked (${machine()})

Seeded in ${seedSeconds.toFixed(1)} s, with every constraint, index and trigger in place: ${PRACTITIONERS} practitioners at
${CENTER} (${TZ}, ${SLOT_MINUTES}-minute slots, Monday to Friday ${WINDOWS.map((w) => w.join('-')).join(' and ')}: 33 slots a
day); ${BOOKED} booked appointments scattered over the two weeks from ${monday} (week 1 has ${counts.week_booked}
of its ${counts.week_grid} slots booked), ${CANCELLED} cancelled ones on other slots, ${HOLDS} live holds and ${HOLDS}
expired ones, a day off for five practitioners and a morning off for one; then \`ANALYZE\` (autovacuum
is off here). Before any load, week 1 asked in two-hour windows equals, slot for slot, the free grid
this script computes on its own (${free.length} slots); the first page, \`limit=1\` and a practitioner filter are
its prefixes.

## Availability through the gateway

Token auth, rate limit, access event, proxy, row-level security; ${DURATION} s per row. The bare node:http
server answers the first page's very bytes (${Buffer.byteLength(pageBody)} bytes) in the same run: the ratio is
its req/s divided by the row's.

\`GET /api${query({})}\`

| call | connections | req/s | bare ÷ this | p50 ms | p99 ms | non-2xx | errors |
|---|---|---|---|---|---|---|---|
${[...readRows, ...bareRows].join('\n')}

Target: p50 < 20 ms at 8 connections: **${targetMet ? 'met' : 'gap'}** (p50 ${target.latency.p50} ms, ${target.requests.average.toFixed(0)} req/s).

CPU per request (us, user + system from /proc) on the ${machine().split(', ')[1]}; at a few requests per second
the gateway's and the service's figures are mostly their idle work (timers, access-event batches) shared
out over few requests, PostgreSQL's are the statement:

| call | connections | gateway | appointments | PostgreSQL (this database's backends) | load generator |
|---|---|---|---|---|---|
${readCpu.join('\n')}

The statement alone (the first page, as the service role, in one open transaction), median ms of
3 × 20 runs from this script's connection, rounds alternating:

| unnamed (parsed and planned each call) | prepared, custom plan each call | prepared, generic plan | prepared, \`plan_cache_mode = auto\` |
|---|---|---|---|
| ${statementMedian.toFixed(2)} | ${statementMedianOf('force_custom_plan').toFixed(2)} | ${statementMedianOf('force_generic_plan').toFixed(2)} | ${statementMedianOf('auto').toFixed(2)} |

In the \`auto\` rounds (the forced ones before them) PostgreSQL made ${planCache.custom_plans} custom plans and used the
generic plan ${planCache.generic_plans} times.

## Holds and bookings racing for the same slots

${RACE_CONNECTIONS} keep-alive connections for ${RACE_SECONDS} s through the gateway, on week 3's grid in the order a
portal offers it; each slot is asked for by ${PER_SLOT} requests in a row (${RACE_CONNECTIONS / PER_SLOT} slots fought over at any
moment), half holds and half bookings without a hold (each a new patient); a hold that wins is booked
at once with its \`hold_id\`. The patients service is a stub that always answers 200. The share of 201
is set by the design (one winner in ${PER_SLOT}); what matters is that each slot got exactly one.

| requests | count | 201 | 409 | other | p50 ms | p99 ms |
|---|---|---|---|---|---|---|
${raceRow('hold', '`POST /appointments/holds`')}
${raceRow('book', '`POST /appointments` (no hold)')}
${raceRow('convert', '`POST /appointments` with `hold_id`')}

- **${racePerSecond.toFixed(0)} requests/s** (holds + bookings + conversions), ${((count('hold', 201) + count('book', 201) + count('convert', 201)) / RACE_SECONDS).toFixed(0)} of them 201/s; the same client
  against the bare node:http server: ${bareRacePerSecond.toFixed(0)}/s (${times(bareRacePerSecond, racePerSecond)} this).
- Of the ${attempts} racing requests: ${pct(count('hold', 201) + count('book', 201))} 201, ${pct(count('hold', 409) + count('book', 409))} 409 slot_conflict
  (${r.conflicts ? ((r.alternatives / r.conflicts) * 100).toFixed(0) : 0}% of them with \`alternatives\`), ${pct(attempts - raced)} other.
- ${r.last - r.first} slots fought over, ${r.winners.size} with a winner; ${doubleWinners} with two. Afterwards in the database:
  ${checks.calendar_overlaps} overlapping calendar rows, ${checks.appointment_overlaps} overlapping active appointments of a
  practitioner; ${checks.raced_appointments} appointments and ${checks.raced_holds} holds in week 3; ${checks.active} active
  appointments and ${checks.calendar_appointments} appointment rows in the calendar.
${problems.length ? `\n**Problems** (the race should give none):\n\n${problems.map((l) => `- ${l}`).join('\n')}\n` : ''}
CPU per request of the race (us, as above): gateway ${r.cpu[0]}, appointments ${r.cpu[1]}, PostgreSQL
${r.cpu[2]} (this database's backends), load generator ${r.cpu[3]}.

## The availability statement's plan

\`EXPLAIN (ANALYZE, BUFFERS)\` of the statement \`availabilityStatement\` builds for the first page
(the whole week, every practitioner, 100 slots), as the service role under row-level security:

\`\`\`
${plan}
\`\`\`

The generic plan of the same statement, prepared (\`EXECUTE\` with \`plan_cache_mode = force_generic_plan\`,
the plan \`auto\` uses after five calls): planned once, so its planning time is the plan cache's lookup.

\`\`\`
${genericPlan}
\`\`\`
`,
)
process.exit(problems.length ? 1 : 0)

function quantile(values, q) {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]
}

/** How many times `a` is `b`, for a ratio column. */
function times(a, b) {
  return b > 0 ? `${(a / b).toFixed(a / b < 10 ? 1 : 0)}×` : '-'
}

function parse(text) {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}

function firstDifference(got, want) {
  for (let i = 0; i < Math.max(got.length, want.length); i++)
    if (got[i] !== want[i]) return `at ${i} of ${want.length}: got ${got[i]}, expected ${want[i]}`
  return null
}
