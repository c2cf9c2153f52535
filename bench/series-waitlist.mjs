// Recurring series and the waitlist (DESIGN.md section 20) through the gateway, as a client meets
// them; gateway, patients, appointments and comms from the build as processes (COMMS_DELIVERY=files:
// emails are .eml files in OUTBOX_DIR), in a database and a RabbitMQ vhost of their own.
//
// 1. series: `POST /api/appointments/series` of a 52-occurrence weekly series
//    (`FREQ=WEEKLY;COUNT=52`, 30 min; a practitioner and a patient of its own each run, so nothing
//    conflicts; the practitioner registered with hours 08:00-20:00 every day unless FREE_TEXT=1):
//    p50 / p95 after a warm-up. In the same run and interleaved with it, so that the same noise
//    falls on each: one plain booking (`POST /api/appointments`, one occurrence) and a bare
//    node:http server answering a body of the series answer's size (the machine's floor). CPU ms
//    per series by process and the SQL statements per series (appointments' db_statements_total).
//    Target: p95 < 300 ms.
// 2. waitlist: an appointment of a practitioner of its own and a waitlist entry of another patient
//    (email only) for that practitioner, then, after a random pause of 0-1 s (the waitlist worker
//    polls every second: runs started right after the previous one's message would land at the
//    same phase of its poll each time), `PATCH /api/appointments/{id}` cancelled; measured until
//    the offer's email has left comms: its .eml file written in OUTBOX_DIR (the file provider's
//    hand-off, as an SMTP server's acceptance would be; its mtime, and the moment inotify told this
//    script). Each stage from the rows' own timestamps: the offer made (waitlist_offers.created_at,
//    the worker's transaction), the message queued (comms.messages.created_at, comms' consumer),
//    claimed and sent (claimed_at, sent_at). Checked after each run: the entry offered that slot,
//    `GET /api/comms/messages?patient_id=` says sent, the .eml links to `/p/w/`. Target: p95 < 5 s.
//
// Run: node bench/series-waitlist.mjs after `npm run build` (or `node scripts/pnpm.mjs exec tsc -b`).
// CASES=series,waitlist (both by default), RUNS (40 of each), WARMUP (5), BARE (5 bare requests per
// run), FREE_TEXT=1 (no practitioner registered: no hours checked), RUN_TIMEOUT_S (30: a waitlist
// run without its email by then is a failure), SETTLE_MS (300: how long after an answer its CPU and
// statements are still counted), RESULT (results/<RESULT>.md, default series-waitlist).
import { mkdtempSync, readFileSync, rmSync, statSync, watch } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import pg from 'pg'
import { bareHttp, benchTenant, cpuSeconds, databaseBackendCpu, machine, record, startStack } from './lib.mjs'

const CASES = (process.env.CASES ?? 'series,waitlist').split(',')
const RUNS = Number(process.env.RUNS ?? 40)
const WARMUP = Number(process.env.WARMUP ?? 5)
const BARE = Number(process.env.BARE ?? 5)
const RUN_TIMEOUT_S = Number(process.env.RUN_TIMEOUT_S ?? 30)
const FREE_TEXT = process.env.FREE_TEXT === '1'
const PRACTITIONER = FREE_TEXT
  ? 'free-text practitioner (none registered)'
  : 'registered practitioner (hours 08:00-20:00 every day)'
const COUNT = 52
/** After an answer, before its cost is read: the events it published relayed and consumed. */
const SETTLE_MS = Number(process.env.SETTLE_MS ?? 300)
const CENTER = 'C1'
const sleep = (ms) => new Promise((r) => setTimeout(r, ms))
const load0 = os.loadavg()

const { env: base, token } = await benchTenant('clinic_bench_series_waitlist', {
  services: ['patients', 'appointments', 'comms'],
  centers: [CENTER],
})
const db = new pg.Client({ connectionString: base.DATABASE_URL })
await db.connect()

// Patients seeded with SQL, each run's own: S<n> books a series and a plain booking, A<n> the
// appointment a waitlist run cancels, W<n> waits for it (email only, so the offer is one .eml).
const total = WARMUP + RUNS
const patient = (kind, n) => `00000000-0000-4000-${kind}000-${String(n).padStart(12, '0')}`
await db.query(
  `INSERT INTO patients.patients (idempresa, id, codalmacen, first_name, last_name, birth_date, email,
                                  preferred_channel, language)
   SELECT 1, ('00000000-0000-4000-' || k.code || '000-' || lpad(n::text, 12, '0'))::uuid, $2,
          'Nombre' || n, k.name || n, date '1970-01-01' + n,
          CASE WHEN k.code = 'c' THEN 'wl-' || n || '@example.com' END,
          CASE WHEN k.code = 'c' THEN 'email' END, 'es'
     FROM generate_series(0, $1::integer - 1) n,
          (VALUES ('a', 'Serie'), ('b', 'Cancela'), ('c', 'Espera')) AS k (code, name)`,
  [total, CENTER],
)
// Practitioners registered, 08:00-20:00 every day at the center: every claim checks their hours
// (FREE_TEXT=1: none registered, the practitioners are free text, no hours to check).
if (!FREE_TEXT)
  await db.query(
    `INSERT INTO appointments.practitioners (idempresa, id, name, time_zone, working_hours)
   SELECT 1, k.p || n, 'Dr. Bench ' || k.p || n, 'Europe/Madrid',
          (SELECT jsonb_agg(jsonb_build_object('codalmacen', $2::text, 'weekday', d, 'start', '08:00', 'end', '20:00'))
             FROM generate_series(1, 7) d)
     FROM generate_series(0, $1::integer - 1) n, (VALUES ('s-'), ('one-'), ('w-')) AS k (p)`,
    [total, CENTER],
  )
await db.query('ANALYZE patients.patients, appointments.practitioners')

const outbox = mkdtempSync(path.join(os.tmpdir(), 'clinic-bench-series-waitlist-'))
process.once('exit', () => rmSync(outbox, { recursive: true, force: true }))
const stack = await startStack(base, ['patients', 'appointments', 'comms'], {
  COMMS_DELIVERY: 'files',
  SMTP_URL: '',
  OUTBOX_DIR: outbox,
  PUBLIC_BASE_URL: 'http://127.0.0.1:8080',
  COMMS_DAILY_EMAIL_LIMIT: '10000000',
  COMMS_HOURLY_ADDRESS_LIMIT: '10000',
})
for (const signal of ['SIGINT', 'SIGTERM'])
  process.on(signal, () => void stack.stop().finally(() => process.exit(130)))
const { api, procs, ports } = stack
const headers = { 'x-service-token': token, 'content-type': 'application/json' }
const call = async (method, url, body) => {
  const res = await fetch(`${api}${url}`, { method, headers, body: body && JSON.stringify(body) })
  const text = await res.text()
  return { status: res.status, text, json: () => JSON.parse(text) }
}

const percentile = (values, p) => {
  const s = values.filter(Number.isFinite).sort((a, b) => a - b)
  return s.length ? s[Math.max(0, Math.ceil(p * s.length) - 1)] : NaN
}
const p50 = (v) => percentile(v, 0.5)
const p95 = (v) => percentile(v, 0.95)
const ms = (v) => (Number.isFinite(v) ? v.toFixed(0) : 'n/a')
const ms1 = (v) => (Number.isFinite(v) ? v.toFixed(1) : 'n/a')

/** A date `days` ahead (UTC calendar), moved forward to `weekday` (0 Sunday .. 6 Saturday). */
function dayAhead(days, weekday) {
  const d = new Date(Date.now() + days * 86_400_000)
  while (weekday !== undefined && d.getUTCDay() !== weekday) d.setUTCDate(d.getUTCDate() + 1)
  return d.toISOString().slice(0, 10)
}

const statements = async (service) => {
  const body = await (await fetch(`http://127.0.0.1:${ports[service]}/metrics`)).text()
  return [...body.matchAll(/^db_statements_total(?:\{[^}]*\})? (\d+)/gm)].reduce(
    (s, m) => s + Number(m[1]),
    0,
  )
}
const PROCS = ['gateway', 'patients', 'appointments', 'comms']
const cpuNow = async () => ({
  ...Object.fromEntries(PROCS.map((n) => [n, cpuSeconds(procs[n].pid)])),
  backends: await databaseBackendCpu(db),
})
const cpuSince = (a, b) => {
  let pgSeconds = 0
  for (const [pid, s] of b.backends) pgSeconds += s - (a.backends.get(pid) ?? 0)
  return { ...Object.fromEntries(PROCS.map((n) => [n, b[n] - a[n]])), postgres: pgSeconds }
}

const sections = []
const problems = []

// ---------------------------------------------------------------- 1. series
if (CASES.includes('series')) {
  const monday = dayAhead(7, 1)
  const tuesday = dayAhead(8, 2)
  const seriesBody = (n) => ({
    patient_id: patient('a', n),
    practitioner: `s-${n}`,
    codalmacen: CENTER,
    start: `${monday}T10:00`,
    duration_minutes: 30,
    rrule: `FREQ=WEEKLY;COUNT=${COUNT}`,
  })
  // The plain booking: the same patient, the day after the series' first occurrence.
  const singleBody = (n) => ({
    patient_id: patient('a', n),
    practitioner: `one-${n}`,
    codalmacen: CENTER,
    starts_at: `${tuesday}T09:00:00Z`,
    ends_at: `${tuesday}T09:30:00Z`,
  })
  const series = []
  const single = []
  const bare = []
  const cost = { series: [], single: [] }
  let answerBytes = 0
  let bareServer = null
  const failures = []
  /**
   * One request timed, and (measured) what it cost: CPU by process and appointments' statements
   * from before it to SETTLE_MS after its answer (the outbox relay publishes its events after the
   * commit; comms consumes them).
   */
  const timed = async (kind, measured, f) => {
    const a = measured && { cpu: await cpuNow(), statements: await statements('appointments') }
    const t = performance.now()
    const res = await f()
    const took = performance.now() - t
    if (measured) {
      await sleep(SETTLE_MS)
      const b = { cpu: await cpuNow(), statements: await statements('appointments') }
      cost[kind].push({ ...cpuSince(a.cpu, b.cpu), statements: b.statements - a.statements })
    }
    return { res, took }
  }
  for (let n = 0; n < total; n++) {
    const measured = n >= WARMUP
    if (n === WARMUP) {
      // The floor answers a body of the series answer's size, from a process started now.
      bareServer = await bareHttp(JSON.stringify({ pad: 'x'.repeat(Math.max(0, answerBytes - 10)) }))
      for (let i = 0; i < 20; i++) await (await fetch(bareServer.url, { method: 'POST', body: '{}' })).text()
    }
    const s = await timed('series', measured, () => call('POST', '/appointments/series', seriesBody(n)))
    if (s.res.status !== 201 || s.res.json().occurrences?.length !== COUNT)
      failures.push(`series ${n}: ${s.res.status} ${s.res.text.slice(0, 300)}`)
    else answerBytes = Buffer.byteLength(s.res.text)
    const one = await timed('single', measured, () => call('POST', '/appointments', singleBody(n)))
    if (one.res.status !== 201) failures.push(`booking ${n}: ${one.res.status} ${one.res.text.slice(0, 300)}`)
    if (measured) {
      series.push(s.took)
      single.push(one.took)
      for (let i = 0; i < BARE; i++) {
        const t = performance.now()
        await (await fetch(bareServer.url, { method: 'POST', body: JSON.stringify(seriesBody(n)) })).text()
        bare.push(performance.now() - t)
      }
    }
    if (n % 10 === 9) console.log(`series: ${n + 1} of ${total}, last ${s.took.toFixed(0)} ms`)
  }
  bareServer?.stop()
  const perRequest = (kind) =>
    Object.fromEntries(
      [...PROCS, 'postgres', 'statements'].map((k) => [
        k,
        (cost[kind].reduce((sum, c) => sum + c[k], 0) / cost[kind].length) * (k === 'statements' ? 1 : 1000),
      ]),
    )
  const cpuPerSeries = perRequest('series')
  const cpuPerBooking = perRequest('single')
  const cpuText = (c) =>
    [...PROCS, 'postgres']
      .map((k) => `${k === 'postgres' ? "PostgreSQL (the database's backends)" : k} ${ms1(c[k])}`)
      .join(', ')
  problems.push(...failures)
  const check = await db.query(
    `SELECT count(*)::int AS n, count(DISTINCT series_id)::int AS series FROM appointments.appointments
      WHERE idempresa = 1 AND series_id IS NOT NULL`,
  )
  sections.push(`## 1. Booking a ${COUNT}-occurrence weekly series

\`POST /api/appointments/series\` \`{patient_id, practitioner, codalmacen, start: "${monday}T10:00", duration_minutes: 30, rrule: "FREQ=WEEKLY;COUNT=${COUNT}"}\`,
a ${PRACTITIONER} and a patient of its own each run, one
request at a time through the gateway; ${WARMUP} warm-up runs, then ${series.length}. Interleaved
with it: one plain booking (\`POST /api/appointments\`, a practitioner of its own) and ${BARE}
requests to a bare node:http server answering ${answerBytes.toLocaleString('en')} bytes (the size
of the series answer). ${check.rows[0].series} series, ${check.rows[0].n.toLocaleString('en')} occurrences booked in all.

| request | p50 ms | p95 ms | max ms | p50 / bare | p95 / bare |
| --- | ---: | ---: | ---: | ---: | ---: |
| \`POST /api/appointments/series\` (${COUNT} occurrences, 201) | **${ms(p50(series))}** | **${ms(p95(series))}** | ${ms(Math.max(...series))} | ${(p50(series) / p50(bare)).toFixed(0)}x | ${(p95(series) / p95(bare)).toFixed(0)}x |
| \`POST /api/appointments\` (one appointment, 201) | ${ms(p50(single))} | ${ms(p95(single))} | ${ms(Math.max(...single))} | ${(p50(single) / p50(bare)).toFixed(0)}x | ${(p95(single) / p95(bare)).toFixed(0)}x |
| bare node:http, same client (${bare.length} requests) | ${ms1(p50(bare))} | ${ms1(p95(bare))} | ${ms1(Math.max(...bare))} | 1x | 1x |

Target: p95 < 300 ms: **${p95(series) < 300 ? 'met' : 'not met'}**. A series costs ${(p50(series) / p50(single)).toFixed(1)}x a
single booking at p50 (${ms1(p50(series) / COUNT)} ms per occurrence).

CPU ms by process, from the request to ${SETTLE_MS} ms after its answer (its events published and
consumed meanwhile): a series ${cpuText(cpuPerSeries)}; a booking ${cpuText(cpuPerBooking)}.
SQL statements in appointments: ${cpuPerSeries.statements.toFixed(0)} a series (${(cpuPerSeries.statements / COUNT).toFixed(1)} an occurrence), ${cpuPerBooking.statements.toFixed(0)} a booking.
${failures.length ? `\nFailures: ${failures.length} (${failures.slice(0, 3).join('; ')})\n` : ''}`)
  console.log(sections.at(-1))
}

// ---------------------------------------------------------------- 2. waitlist
if (CASES.includes('waitlist')) {
  const day = dayAhead(2)
  const slot = { starts_at: `${day}T09:00:00Z`, ends_at: `${day}T09:30:00Z` }
  // Every .eml comms writes, by the address it is to: when inotify told this script, and its file.
  const expected = new Map() // address -> resolve
  const seen = new Set()
  const watcher = watch(outbox, (_event, name) => {
    if (!name || !name.endsWith('.eml') || seen.has(name)) return
    const at = Date.now()
    let text
    try {
      text = readFileSync(path.join(outbox, name), 'utf8')
    } catch {
      return // not there yet
    }
    const to = /^To: .*?<?([^<>\s]+@[^<>\s]+)>?\s*$/m.exec(text)?.[1]
    if (!to) return // still being written: its next event reads it again
    seen.add(name)
    expected.get(to.toLowerCase())?.({ name, at, text })
  })
  const runs = []
  const failures = []
  for (let n = 0; n < total; n++) {
    const practitioner = `w-${n}`
    const address = `wl-${n}@example.com`
    const a = await call('POST', '/appointments', {
      patient_id: patient('b', n),
      practitioner,
      codalmacen: CENTER,
      ...slot,
    })
    const entry = await call('POST', '/appointments/waitlist', {
      patient_id: patient('c', n),
      codalmacen: CENTER,
      practitioner,
      duration_minutes: 30,
    })
    if (a.status !== 201 || entry.status !== 201) {
      failures.push(
        `setup ${n}: appointment ${a.status} ${a.text.slice(0, 200)}; entry ${entry.status} ${entry.text.slice(0, 200)}`,
      )
      continue
    }
    const appointment = a.json()
    const entryId = entry.json().id
    // A random phase against the worker's 1 s poll (it also wakes on NOTIFY).
    await sleep(Math.random() * 1000)
    let timer
    const email = new Promise((resolve) => {
      expected.set(address, resolve)
      timer = setTimeout(() => resolve(null), RUN_TIMEOUT_S * 1000)
    })
    const t0 = Date.now()
    const cancel = await call('PATCH', `/appointments/${appointment.id}`, {
      status: 'cancelled',
      cancellation_reason: 'bench',
    })
    const tPatch = Date.now()
    const got = await email
    clearTimeout(timer)
    expected.delete(address)
    if (cancel.status !== 200) {
      failures.push(`cancel ${n}: ${cancel.status} ${cancel.text.slice(0, 200)}`)
      continue
    }
    const rows = async () => ({
      offer: (
        await db.query(
          `SELECT id, starts_at, extract(epoch FROM created_at) * 1000 AS made
             FROM appointments.waitlist_offers WHERE idempresa = 1 AND entry_id = $1 ORDER BY created_at`,
          [entryId],
        )
      ).rows,
      message: (
        await db.query(
          `SELECT id, status, extract(epoch FROM created_at) * 1000 AS queued,
                  extract(epoch FROM claimed_at) * 1000 AS claimed, extract(epoch FROM sent_at) * 1000 AS sent
             FROM comms.messages WHERE idempresa = 1 AND patient_id = $1`,
          [patient('c', n)],
        )
      ).rows,
    })
    if (!got) {
      failures.push(`run ${n}: no email in ${RUN_TIMEOUT_S} s (${JSON.stringify(await rows())})`)
      continue
    }
    // As a client reads it: the message sent (recorded just after the file is written).
    let listedMessage
    for (let i = 0; i < 100; i++) {
      const listed = (await call('GET', `/comms/messages?patient_id=${patient('c', n)}`)).json()
      listedMessage = listed.data?.find((x) => `${x.id}.eml` === got.name)
      if (listedMessage?.status === 'sent') break
      await sleep(50)
    }
    const { offer, message } = await rows()
    const written = statSync(path.join(outbox, got.name)).mtimeMs
    // What a client sees: the entry offered that slot, the message sent, its link in the email.
    const view = (await call('GET', `/appointments/waitlist/${entryId}`)).json()
    const m = message[0]
    const issues = []
    if (view.status !== 'offered' || Date.parse(view.offer?.starts_at) !== Date.parse(appointment.starts_at))
      issues.push(`entry ${view.status}, offer ${JSON.stringify(view.offer)}`)
    if (offer.length !== 1 || message.length !== 1)
      issues.push(`${offer.length} offers, ${message.length} messages`)
    if (`${m?.id}.eml` !== got.name) issues.push(`file ${got.name}, message ${m?.id}`)
    if (listedMessage?.status !== 'sent')
      issues.push(`GET /comms/messages says ${listedMessage?.status} after 5 s`)
    if (!/\/p\/w\//.test(got.text.replace(/=\r?\n/g, ''))) issues.push('no /p/w/ link in the email')
    if (issues.length) failures.push(`run ${n}: ${issues.join('; ')}`)
    if (n < WARMUP || !offer.length || !m) continue
    runs.push({
      patch: tPatch - t0,
      offered: Number(offer[0].made) - t0,
      queued: Number(m.queued) - t0,
      claimed: m.claimed === null ? NaN : Number(m.claimed) - t0,
      written: written - t0,
      sent: m.sent === null ? NaN : Number(m.sent) - t0,
      seen: got.at - t0,
    })
    if (n % 10 === 9) console.log(`waitlist: ${n + 1} of ${total}, last ${(written - t0).toFixed(0)} ms`)
  }
  watcher.close()
  problems.push(...failures)
  const col = (f) => runs.map(f)
  const stage = (name, f, note) => {
    const v = col(f)
    return `| ${name} | ${ms(p50(v))} | ${ms(p95(v))} | ${ms(Math.min(...v))} | ${ms(Math.max(...v))} | ${note} |`
  }
  const written = col((r) => r.written)
  sections.push(`## 2. From a cancellation to the waitlist offer leaving comms

Each run: an appointment (${slot.starts_at.slice(11, 16)}-${slot.ends_at.slice(11, 16)} UTC, ${day}) of a ${PRACTITIONER} of its own and a waitlist
entry of another patient (email only) for that practitioner, 30 min; after a random pause of 0-1 s,
\`PATCH /api/appointments/{id}\` \`{status: "cancelled", cancellation_reason: "bench"}\` at t = 0.
"Left comms" is the offer's .eml written in OUTBOX_DIR by comms' file provider (COMMS_DELIVERY=files:
the provider's hand-off, where an SMTP server's acceptance would be): its mtime. ${WARMUP} warm-up
runs, then ${runs.length}. Times from t = 0, ms (the stages from each row's own timestamp, ms precision):

| stage (from the cancellation's request) | p50 | p95 | min | max | what |
| --- | ---: | ---: | ---: | ---: | --- |
${[
  stage(
    'cancel answered (200)',
    (r) => r.patch,
    'the PATCH, the freed-time job queued by the calendar trigger in its transaction',
  ),
  stage(
    'offer made',
    (r) => r.offered,
    "`waitlist_offers.created_at`: the worker's job transaction began (woken by the calendar trigger's NOTIFY; its 1 s poll otherwise)",
  ),
  stage(
    'message queued in comms',
    (r) => r.queued,
    "`comms.messages.created_at`: outbox -> RabbitMQ -> comms' waitlist consumer",
  ),
  stage(
    'message claimed for delivery',
    (r) => r.claimed,
    "`claimed_at`: comms' delivery worker (woken by NOTIFY)",
  ),
  `| **.eml written (left comms)** | **${ms(p50(written))}** | **${ms(p95(written))}** | ${ms(Math.min(...written))} | ${ms(Math.max(...written))} | the file's mtime |`,
  stage('seen by this script (inotify)', (r) => r.seen, 'the client side of the same'),
  stage('`sent_at` recorded', (r) => r.sent, '`GET /api/comms/messages` says sent from here'),
].join('\n')}

Target: p95 < 5 s: **${p95(written) < 5000 ? 'met' : 'not met'}**.

Per stage (the difference between consecutive rows, p50 / p95 ms): PATCH ${ms(p50(col((r) => r.patch)))} / ${ms(p95(col((r) => r.patch)))};
answered -> offer made ${ms(p50(col((r) => r.offered - r.patch)))} / ${ms(p95(col((r) => r.offered - r.patch)))};
offer made -> queued in comms ${ms(p50(col((r) => r.queued - r.offered)))} / ${ms(p95(col((r) => r.queued - r.offered)))};
queued -> claimed ${ms(p50(col((r) => r.claimed - r.queued)))} / ${ms(p95(col((r) => r.claimed - r.queued)))};
claimed -> written ${ms(p50(col((r) => r.written - r.claimed)))} / ${ms(p95(col((r) => r.written - r.claimed)))}.
${failures.length ? `\nFailures or failed checks: ${failures.length} (${failures.slice(0, 5).join('; ')})\n` : ''}`)
  console.log(sections.at(-1))
}

const load1 = os.loadavg()
await db.end()
await stack.stop()
record(
  process.env.RESULT ?? 'series-waitlist',
  `# Recurring series and the waitlist (DESIGN.md section 20)

${machine()}. Gateway, patients, appointments and comms from the build (LOG_LEVEL=warn), PostgreSQL 15
and RabbitMQ on the same machine, the client (this script) too. Load average (1 min) ${load0[0].toFixed(2)}
before, ${load1[0].toFixed(2)} after: a shared machine; compare with the bare node:http floor of the same run.

${sections.join('\n')}`,
)
if (problems.length) {
  console.error(`${problems.length} problems:\n${problems.join('\n')}`)
  process.exitCode = 1
}
