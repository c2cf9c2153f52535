// Reminders at scale: REMINDERS (50,000) reminders of one company due in the same minute. Patients
// (each with a phone of their own, SMS preferred), their appointments and the reminders are seeded
// straight into their schemas, then comms' clock (COMMS_CLOCK_FILE) is moved to the start of that
// minute: the reminder worker claims them (claim_reminders, a lease), looks up each appointment and
// patient over signed internal HTTP (appointments, patients), queues the message and settles the
// reminder in one transaction; the delivery worker writes each SMS to OUTBOX_DIR/sms.jsonl
// (COMMS_DELIVERY=files). Measured: reminders settled per second, due -> sent p50 / p99 (from each
// one's due time on comms' clock), messages delivered per second and queued -> sent; CPU per
// reminder in every process (comms, patients, appointments, the database's backends, RabbitMQ),
// comms' SQL statements and claims per reminder. Next to it, in the same run, a bare node:http
// client making the same two lookups per reminder (16 at a time, as REMINDER_CONCURRENCY) against a
// bare node:http server answering the same bodies: what the lookups alone cost on this machine.
// Run: node bench/reminders.mjs after `npm run build` (a database and a vhost of its own).
// REMINDERS, BARE and TIMEOUT_S change the sizes.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import http from 'node:http'
import os from 'node:os'
import path from 'node:path'
import pg from 'pg'
import {
  BENCH_SECRET,
  benchTenant,
  cpuOf,
  cpuSeconds,
  machine,
  machineCpu,
  pidsOf,
  record,
  sampleBackends,
  startStack,
} from './lib.mjs'

const REMINDERS = Number(process.env.REMINDERS ?? 50_000)
const BARE = Number(process.env.BARE ?? 20_000)
const TIMEOUT_S = Number(process.env.TIMEOUT_S ?? 900)
const CONCURRENCY = 16
const sleep = (ms) => new Promise((r) => setTimeout(r, ms))
const load0 = os.loadavg()[0]

const { env: base } = await benchTenant('clinic_bench_reminders', {
  services: ['patients', 'appointments', 'comms'],
  centers: ['C1'],
})
const datname = new URL(base.DATABASE_URL).pathname.slice(1)
const db = new pg.Client({ connectionString: base.DATABASE_URL })
await db.connect()
// claim_reminders' calls and time in pg_stat_user_functions (for the connections made after this).
await db.query(`ALTER DATABASE ${datname} SET track_functions = 'all'`)

// The minute every reminder is due in, two days ahead: due_at spread over its 60 seconds, each
// appointment an hour later (offset PT1H), a practitioner and a patient of its own.
const minute = Math.floor((Date.now() + 2 * 86_400_000) / 60_000) * 60_000
const seedStarted = Date.now()
await db.query(
  `CREATE TEMP TABLE seed AS
     SELECT i, gen_random_uuid() AS patient_id, gen_random_uuid() AS appointment_id,
            to_timestamp($2::bigint / 1000.0) + (i % 60) * interval '1 second' AS due_at
       FROM generate_series(1, $1::integer) i`,
  [REMINDERS, minute],
)
await db.query(
  `INSERT INTO patients.patients (idempresa, id, codalmacen, first_name, last_name, birth_date, phone,
     preferred_channel, language)
   SELECT 1, patient_id, 'C1', 'Nombre' || i % 997, 'Apellido' || i, date '1940-01-01' + i % 25000,
          '+346' || lpad((10000000 + i)::text, 8, '0'), 'sms', CASE WHEN i % 4 = 0 THEN 'en' ELSE 'es' END
     FROM seed`,
)
await db.query(
  `INSERT INTO appointments.appointments (idempresa, id, patient_id, codalmacen, practitioner, starts_at,
     ends_at, time_zone, status)
   SELECT 1, appointment_id, patient_id, 'C1', 'dr-' || i, due_at + interval '1 hour',
          due_at + interval '80 minutes', 'Europe/Madrid', 'scheduled'
     FROM seed`,
)
await db.query(
  `INSERT INTO comms.reminders (idempresa, id, appointment_id, patient_id, codalmacen, offset_iso, starts_at,
     time_zone, appointment_version, due_at, next_attempt_at, status, confirm_link)
   SELECT 1, gen_random_uuid(), appointment_id, patient_id, 'C1', 'PT1H', due_at + interval '1 hour',
          'Europe/Madrid', 1, due_at, due_at, 'scheduled', true
     FROM seed`,
)
await db.query(`INSERT INTO comms.reminder_policies (idempresa, enabled, offsets) VALUES (1, true, '{PT1H}')`)
// Autovacuum is off on this machine: statistics as autovacuum would keep them.
await db.query(
  'ANALYZE patients.patients, appointments.appointments, appointments.calendar, comms.reminders, comms.messages',
)
const seedS = (Date.now() - seedStarted) / 1000

const outbox = mkdtempSync(path.join(os.tmpdir(), 'clinic-bench-reminders-'))
const clockFile = path.join(outbox, 'comms-clock')
const stack = await startStack(base, ['patients', 'appointments', 'comms'], {
  COMMS_DELIVERY: 'files',
  OUTBOX_DIR: outbox,
  COMMS_CLOCK_FILE: clockFile,
  COMMS_LINK_SECRET: BENCH_SECRET,
  PUBLIC_BASE_URL: 'http://127.0.0.1:8080',
  // Limits that would cut the run: 50,000 SMS of one company in a day.
  COMMS_DAILY_SMS_LIMIT: '10000000',
  COMMS_DAILY_EMAIL_LIMIT: '10000000',
  COMMS_HOURLY_ADDRESS_LIMIT: '10000',
})
const { procs, ports } = stack
process.once('exit', () => Object.values(procs).forEach((p) => p.kill()))

/** The database's backends (read from pg_stat_activity every second): CPU since first seen. */
const backends = (() => {
  const first = new Map()
  const last = new Map()
  let stopped = false
  const read = async () => {
    const { rows } = await db.query(
      `SELECT pid FROM pg_stat_activity WHERE datname = $1 AND backend_type = 'client backend' AND pid <> pg_backend_pid()`,
      [datname],
    )
    for (const { pid } of rows)
      try {
        const s = cpuSeconds(pid)
        if (!first.has(pid)) first.set(pid, s)
        last.set(pid, s)
      } catch {
        // gone meanwhile: its last reading stays
      }
  }
  return {
    async start() {
      await read()
      first.clear()
      await read()
      void (async () => {
        while (!stopped) {
          await sleep(1000)
          await read()
        }
      })()
    },
    async stop() {
      stopped = true
      await read()
      let s = 0
      for (const [pid, f] of first) s += (last.get(pid) ?? f) - f
      return s
    },
  }
})()
/**
 * What the database's backends are doing, every 100 ms (pg_stat_activity, read from another
 * database so that the sampling is not counted in this one): active statements and their waits,
 * and what those idle in a transaction ran last. Per sample, so 1.00 is one backend all along.
 */
const mon = new pg.Client({
  connectionString: process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres',
})
await mon.connect()
const label = (q) => {
  const known = [
    [/claim_reminders/, 'claim_reminders()'],
    [/daily_counts/, 'daily_counts (daily quota)'],
    [/pg_advisory_xact_lock/, 'advisory lock (hourly quota)'],
    [/count\(\*\)[\s\S]*"messages"/i, 'count messages (hourly quota)'],
    [/from "preferences"/i, 'preferences (consent)'],
    [/^insert into "messages"/i, 'INSERT messages'],
    [/^update "messages"/i, 'UPDATE messages (delivery)'],
    [/^select [\s\S]* from "messages"/i, 'SELECT messages'],
    [/^update "reminders"/i, 'UPDATE reminders (settle)'],
    [/from "reminders"[\s\S]*for update/i, 'lock the claimed reminder'],
    [/outbox/, 'outbox'],
    [/processed_events/, 'processed_events'],
    [/set_config/, 'set_config (company)'],
    [/^(COMMIT|commit)/, 'COMMIT'],
    [/^(BEGIN|begin)/, 'BEGIN'],
    [/^(RELEASE|SAVEPOINT|release|savepoint)/i, 'SAVEPOINT / RELEASE'],
  ]
  return known.find(([re]) => re.test(q))?.[1] ?? q.replace(/\s+/g, ' ').trim().slice(0, 40)
}
// This script's own connection (its progress queries) is not the service's work.
const benchPid = (await db.query('SELECT pg_backend_pid() AS pid')).rows[0].pid
let stopSampling
const statements = async () => {
  const body = await (await fetch(`http://127.0.0.1:${ports.comms}/metrics`)).text()
  return [...body.matchAll(/^db_statements_total(?:\{[^}]*\})? (\d+)/gm)].reduce(
    (s, m) => s + Number(m[1]),
    0,
  )
}
const claims = async () =>
  (
    await db.query(
      `SELECT coalesce(sum(calls), 0)::int AS calls, coalesce(sum(total_time), 0) AS ms
         FROM pg_stat_user_functions WHERE funcname = 'claim_reminders'`,
    )
  ).rows[0]
const cpuNow = () => ({
  comms: cpuSeconds(procs.comms.pid),
  patients: cpuSeconds(procs.patients.pid),
  appointments: cpuSeconds(procs.appointments.pid),
  rabbitmq: cpuOf(pidsOf('beam.smp')),
})
const progress = async () =>
  (
    await db.query(
      `SELECT (SELECT count(*)::int FROM comms.reminders WHERE idempresa = 1 AND status <> 'scheduled') AS settled,
              (SELECT count(*)::int FROM comms.messages WHERE idempresa = 1 AND status IN ('queued', 'sending')) AS pending,
              (SELECT count(*)::int FROM comms.messages WHERE idempresa = 1) AS messages`,
    )
  ).rows[0]

// 0. The bare baseline: the two lookups of each reminder, 16 at a time, against node:http serving
// the bodies the services answer for one of the seeded reminders.
const bare = await (async () => {
  const { rows } = await db.query('SELECT appointment_id, patient_id FROM comms.reminders LIMIT 1')
  const bodies = {
    appointment: JSON.stringify({
      id: rows[0].appointment_id,
      patient_id: rows[0].patient_id,
      codalmacen: 'C1',
      practitioner: 'dr-1',
      starts_at: new Date(minute + 3_600_000).toISOString(),
      ends_at: new Date(minute + 4_800_000).toISOString(),
      time_zone: 'Europe/Madrid',
      status: 'scheduled',
      version: 1,
    }),
    patient: JSON.stringify({
      id: rows[0].patient_id,
      codalmacen: 'C1',
      first_name: 'Nombre1',
      last_name: 'Apellido1',
      email: null,
      phone: '+34610000001',
      preferred_channel: 'sms',
      language: 'es',
      requires_legal_guardian: false,
      guardian: null,
      version: 1,
    }),
  }
  const server = http.createServer((req, res) => {
    const body = req.url.startsWith('/internal/appointments/') ? bodies.appointment : bodies.patient
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) })
    res.end(body)
  })
  await new Promise((r) => server.listen(0, '127.0.0.1', r))
  const { port } = server.address()
  const agent = new http.Agent({ keepAlive: true, maxSockets: CONCURRENCY })
  const get = (p) =>
    new Promise((resolve, reject) => {
      http
        .get({ host: '127.0.0.1', port, path: p, agent }, (res) => {
          const chunks = []
          res.on('data', (c) => chunks.push(c))
          res.on('end', () => resolve(JSON.parse(Buffer.concat(chunks).toString('utf8'))))
        })
        .on('error', reject)
    })
  const cpu0 = process.cpuUsage()
  const t0 = performance.now()
  let next = 0
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next++ < BARE) {
        await get(`/internal/appointments/${rows[0].appointment_id}`)
        await get(`/internal/patients/${rows[0].patient_id}`)
      }
    }),
  )
  const wall = (performance.now() - t0) / 1000
  const cpu = process.cpuUsage(cpu0)
  agent.destroy()
  server.close()
  return { rate: BARE / wall, cpuUs: ((cpu.user + cpu.system) / BARE).toFixed(0) }
})()

// 1. The minute arrives: comms' clock moved to its start (reminders fall due over its 60 s).
await sleep(2000) // the services idle after start-up
await backends.start()
const cpu0 = cpuNow()
const machine0 = machineCpu()
const statements0 = await statements()
const claims0 = await claims()
const offsetMs = minute - Date.now()
writeFileSync(clockFile, String(offsetMs))
stopSampling = await sampleBackends(mon, datname, { label, excludePid: benchPid, top: [6, 4, 4] })
const movedAt = Date.now()
const samples = []
let p = { settled: 0, pending: 0, messages: 0 }
let lastLog = movedAt
while (Date.now() - movedAt < TIMEOUT_S * 1000) {
  p = await progress()
  samples.push({ at: Date.now(), ...p })
  if (p.settled >= REMINDERS && p.pending === 0) break
  if (Date.now() - lastLog > 10_000) {
    lastLog = Date.now()
    process.stderr.write(
      `reminders: ${((Date.now() - movedAt) / 1000).toFixed(0)} s, ${p.settled} settled, ${p.messages} messages, ${p.pending} not yet delivered\n`,
    )
  }
  await sleep(1000)
}
const wall = (Date.now() - movedAt) / 1000
const cpu1 = cpuNow()
const machine1 = machineCpu()
const pgCpu = await backends.stop()
const activity = await stopSampling()
const statements1 = await statements()
await sleep(1100) // the backends' statistics reach pg_stat_* within a second
const claims1 = await claims()

// Times: updated_at and created_at are real time; due_at is on comms' clock (real + offsetMs).
const off = `make_interval(secs => ${offsetMs / 1000})`
const stats = (
  await db.query(
    `SELECT count(*)::int AS n,
            count(*) FILTER (WHERE r.status = 'sent')::int AS sent,
            min(r.updated_at) AS first_at, max(r.updated_at) AS last_at,
            percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM r.updated_at + ${off} - r.due_at)) AS p50,
            percentile_cont(0.99) WITHIN GROUP (ORDER BY extract(epoch FROM r.updated_at + ${off} - r.due_at)) AS p99,
            max(extract(epoch FROM r.updated_at + ${off} - r.due_at)) AS max,
            percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM m.sent_at + ${off} - r.due_at)) AS d50,
            percentile_cont(0.99) WITHIN GROUP (ORDER BY extract(epoch FROM m.sent_at + ${off} - r.due_at)) AS d99
       FROM comms.reminders r LEFT JOIN comms.messages m ON m.idempresa = r.idempresa AND m.id = r.message_id
      WHERE r.idempresa = 1 AND r.status <> 'scheduled'`,
  )
).rows[0]
const delivery = (
  await db.query(
    `SELECT count(*) FILTER (WHERE status = 'sent')::int AS sent, min(sent_at) AS first_at, max(sent_at) AS last_at,
            percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM sent_at - created_at)) AS p50,
            percentile_cont(0.99) WITHIN GROUP (ORDER BY extract(epoch FROM sent_at - created_at)) AS p99
       FROM comms.messages WHERE idempresa = 1`,
  )
).rows[0]
const byStatus = async (table) =>
  (
    await db.query(
      `SELECT status, count(*)::int AS n FROM comms.${table} WHERE idempresa = 1 GROUP BY 1 ORDER BY 1`,
    )
  ).rows
    .map((r) => `${r.status} ${r.n.toLocaleString('en')}`)
    .join(', ')
const reminderStates = await byStatus('reminders')
const messageStates = await byStatus('messages')
const [{ twice }] = (
  await db.query(
    `SELECT count(*)::int AS twice FROM (SELECT appointment_id FROM comms.messages WHERE idempresa = 1
      GROUP BY 1 HAVING count(*) > 1) x`,
  )
).rows
let lines = []
try {
  lines = readFileSync(path.join(outbox, 'sms.jsonl'), 'utf8').split('\n').filter(Boolean)
} catch {
  // nothing delivered
}
const handedTwice = lines.length - new Set(lines.map((l) => JSON.parse(l).id)).size

// Settled per second: the whole run (first due -> last settled), and the steady part (10% -> 90%).
const at = (frac) => samples.find((s) => s.settled >= frac * REMINDERS)?.at
const steadyRate = at(0.1) && at(0.9) ? (0.8 * REMINDERS) / ((at(0.9) - at(0.1)) / 1000) : NaN
const lastSettledS = (new Date(stats.last_at).getTime() - movedAt) / 1000
const overallRate = stats.n / lastSettledS
const deliverySpanS = (new Date(delivery.last_at).getTime() - new Date(delivery.first_at).getTime()) / 1000
const deliveryRate = delivery.sent / deliverySpanS
const d = Object.fromEntries(Object.keys(cpu0).map((k) => [k, cpu1[k] - cpu0[k]]))
d.postgres = pgCpu
const us = (sec) => Math.round((sec / stats.n) * 1e6).toLocaleString('en')
const totalCpu = Object.values(d).reduce((s, v) => s + v, 0)
const machineCores = ((machine1.busy - machine0.busy) / (machine1.total - machine0.total)) * os.cpus().length
const n0 = (v) => Math.round(v).toLocaleString('en')
const s1 = (v) => `${Number(v).toFixed(1)} s`
// Every reminder sent, every message delivered, none twice.
const done =
  stats.sent === REMINDERS &&
  Number(p.pending) === 0 &&
  twice === 0 &&
  handedTwice === 0 &&
  lines.length === REMINDERS

record(
  'reminders',
  `# reminders: ${n0(REMINDERS)} due in the same minute

${machine()}; load average ${load0.toFixed(2)} at the start, ${os.loadavg()[0].toFixed(2)} at the end. Patients,
appointments and comms from the build (LOG_LEVEL=warn, REMINDER_CONCURRENCY ${CONCURRENCY}, DELIVERY_CONCURRENCY 16,
COMMS_DELIVERY=files: SMS appended to sms.jsonl), a database and a RabbitMQ vhost of their own.
${n0(REMINDERS)} patients (a phone each, SMS preferred), their appointments (a practitioner each) and one
reminder each (\`PT1H\`, due_at spread over the seconds of one minute) seeded with SQL in ${seedS.toFixed(1)} s, then
\`ANALYZE\` (autovacuum is off here); comms' clock (COMMS_CLOCK_FILE) moved to the start of that minute.
Due -> sent: the reminder's \`updated_at\` (its message queued, in the same transaction) minus its \`due_at\`
on comms' clock; -> delivered: the message's \`sent_at\` (written to the file) minus the same.

| measure | measured | |
| --- | ---: | --- |
| bare node:http: the 2 lookups of a reminder, ${CONCURRENCY} at a time (${n0(BARE)}) | ${n0(bare.rate)} reminders' lookups/s (client ${bare.cpuUs} µs CPU each) | baseline |
| reminders settled per second, steady (10% -> 90%) | ${n0(steadyRate)}/s (bare lookups ${(bare.rate / steadyRate).toFixed(1)}x that) | |
| reminders settled per second, first due -> last settled | ${n0(overallRate)}/s: ${n0(stats.n)} in ${s1(lastSettledS)} | ${done ? 'every one sent once' : 'INCOMPLETE or repeated'} |
| due -> sent (queued), p50 / p99 / max | ${s1(stats.p50)} / ${s1(stats.p99)} / ${s1(stats.max)} | |
| due -> delivered (in sms.jsonl), p50 / p99 | ${s1(stats.d50)} / ${s1(stats.d99)} | |
| messages delivered per second (first -> last sent_at) | ${n0(deliveryRate)}/s: ${n0(delivery.sent)} in ${s1(deliverySpanS)}; queued -> sent p50 ${s1(delivery.p50)}, p99 ${s1(delivery.p99)} | |
| reminders per CPU second (every process below) | ${n0(stats.n / totalCpu)} | |

Reminders by status: ${reminderStates}. Messages by status: ${messageStates}. Appointments with more
than one message: ${twice}; sms.jsonl lines ${n0(lines.length)}, ids written twice ${handedTwice}. Run:
${s1(wall)} from the clock's move until every reminder was settled and every message delivered.

CPU per reminder in µs (user+system from /proc over the run; PostgreSQL the backends of this
database, RabbitMQ its whole beam.smp): comms ${us(d.comms)}, patients ${us(d.patients)}, appointments
${us(d.appointments)}, PostgreSQL ${us(d.postgres)}, RabbitMQ ${us(d.rabbitmq)}; in all ${us(totalCpu)}. Busy:
comms ${(d.comms / wall).toFixed(2)} cores, PostgreSQL ${(d.postgres / wall).toFixed(2)}; the machine ${machineCores.toFixed(2)} of ${os.cpus().length}
cores (${Math.max(0, machineCores - totalCpu / wall).toFixed(2)} not this bench's processes). comms' SQL statements per reminder
(db_statements_total, BEGIN/COMMIT included, delivery too): ${((statements1 - statements0) / stats.n).toFixed(1)};
\`claim_reminders\` calls ${claims1.calls - claims0.calls} (${((claims1.ms - claims0.ms) / Math.max(1, claims1.calls - claims0.calls)).toFixed(1)} ms each).

What the database's backends were doing (pg_stat_activity every 100 ms; backends per sample):
active ${activity.active.toFixed(2)}: ${activity.topActive || '-'}; waiting on ${activity.topWaits || '-'}; idle in
a transaction ${activity.idleInTx.toFixed(2)}, after ${activity.topIdleInTx || '-'}.
`,
)

await db.end()
await mon.end()
await stack.stop()
rmSync(outbox, { recursive: true, force: true })
process.exit(done ? 0 : 1)
