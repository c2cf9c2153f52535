// FHIR Bulk Data export (issue 44) end to end, as a Bulk Data client runs it: one company with
// 1,000,000 resources (100,000 patients, 300,000 appointments, 600,000 Observations from 100,000
// signed exams with 6 findings each), seeded with SQL and ANALYZEd (autovacuum is off here);
// gateway, patients, appointments and clinical from the build as processes. Kick-off
// `GET /api/fhir/R4/$export?_type=Patient,Appointment,Observation` (a token with every scope,
// fhir:export among them), the status polled honouring Retry-After, every file of the manifest
// downloaded streaming (its lines counted, each resource's type and id read from its start, never
// the whole file in memory). Measured: resources per second from kick-off to the last byte, the
// export alone (kick-off to the manifest) and the download; the first byte of the first file; peak
// RSS of every process of the stack (/proc VmRSS every 200 ms, VmHWM at the end); CPU seconds per
// process in each phase; the counts (seeded = manifest = lines, ids unique); the machine's load.
// Targets (issue 44): at least 1,000 resources/s end to end, every process under 200 MiB.
// Run: node bench/export.mjs after `npm run build`; PATIENTS, APPOINTMENTS, OBSERVATIONS change the
// sizes (e.g. PATIENTS=10000 APPOINTMENTS=30000 OBSERVATIONS=60000 for a quick try). PAGING=0 skips
// the comparison (the same resources paged through the FHIR searches, no export). BENCH_NODE_ARGS
// (lib.mjs) gives the stack's node processes flags, e.g. '--max-old-space-size=96', and only them;
// RESULT names the table (results/<RESULT>.md, default export).
import os from 'node:os'
import { readFileSync } from 'node:fs'
import pg from 'pg'
import { benchTenant, cpuSeconds, machine, machineCpu, node, record, startStack } from './lib.mjs'

const PATIENTS = Number(process.env.PATIENTS ?? 100_000)
const APPOINTMENTS = Number(process.env.APPOINTMENTS ?? 300_000)
const OBSERVATIONS = Number(process.env.OBSERVATIONS ?? 600_000)
const PRACTITIONERS = 50
/** Findings (Observations) per exam: IOP, best-corrected acuity and a manifest refraction, each eye. */
const PER_EXAM = 6
const EXAMS = Math.ceil(OBSERVATIONS / PER_EXAM)
const PAGING = process.env.PAGING !== '0'
const TYPES = ['Patient', 'Appointment', 'Observation']
const SERVICES = ['patients', 'appointments', 'clinical']
const sec = () => performance.now() / 1000
const sleep = (ms) => new Promise((r) => setTimeout(r, ms))
const fmt = (n, d = 0) =>
  Number(n).toLocaleString('en', { minimumFractionDigits: d, maximumFractionDigits: d })

const load0 = os.loadavg()
const seedStarted = sec()
const { env: base } = await benchTenant('clinic_bench_export', { services: SERVICES, centers: ['C1', 'C2'] })
// fhir:export is named-only: a token made without a list lacks it.
const token = node('scripts/admin.mjs', base, ['token:create', '--username', 'bench', '--scopes', 'all'])
const db = new pg.Client({ connectionString: base.DATABASE_URL })
await db.connect()
const datname = new URL(base.DATABASE_URL).pathname.slice(1)

// Every row with its own last update (a company's records change over years), in the past.
await db.query(
  `CREATE TEMP TABLE seed_patients AS
     SELECT n, gen_random_uuid() AS id, 'C' || (1 + n % 2) AS codalmacen,
            timestamptz '2021-01-04 08:00Z' + n * interval '7 minutes 13.7 seconds' AS at
       FROM generate_series(0, $1::integer - 1) n`,
  [PATIENTS],
)
await db.query('ALTER TABLE seed_patients ADD PRIMARY KEY (n)')
await db.query(
  `INSERT INTO patients.patients (idempresa, id, codalmacen, first_name, last_name, birth_date, sex, email,
                                  phone, created_at, updated_at)
   SELECT 1, id, codalmacen, 'Nombre' || n % 997, 'Apellido' || n, date '1940-01-01' + (n % 25000),
          CASE n % 3 WHEN 0 THEN 'female' WHEN 1 THEN 'male' ELSE 'unknown' END,
          'p' || n || '@example.test', '+346' || lpad((10000000 + n)::text, 8, '0'), at, at
     FROM seed_patients`,
)
await db.query(
  `INSERT INTO appointments.practitioners (idempresa, id, name, time_zone, working_hours)
   SELECT 1, 'dr-' || k, 'Dr. Bench ' || k, 'Europe/Madrid',
          (SELECT jsonb_agg(jsonb_build_object('codalmacen', 'C' || (1 + k % 2), 'weekday', d, 'start', '08:00', 'end', '20:00'))
             FROM generate_series(1, 7) d)
     FROM generate_series(0, ${PRACTITIONERS - 1}) k`,
)
// Each practitioner's appointments back to back (30 min), each patient's far apart (the two
// exclusion constraints); one in 17 cancelled (with its reason), one in 5 confirmed.
await db.query(
  `INSERT INTO appointments.appointments
     (idempresa, id, patient_id, codalmacen, practitioner, starts_at, ends_at, status, cancellation_reason,
      created_at, updated_at)
   SELECT 1, gen_random_uuid(), p.id, 'C' || (1 + (j % ${PRACTITIONERS}) % 2), 'dr-' || (j % ${PRACTITIONERS}),
          t, t + interval '30 minutes',
          CASE WHEN j % 17 = 0 THEN 'cancelled' WHEN j % 5 = 0 THEN 'confirmed' ELSE 'scheduled' END,
          CASE WHEN j % 17 = 0 THEN 'bench' END,
          u, u
     FROM generate_series(0, $1::integer - 1) j
     JOIN seed_patients p ON p.n = j % $2::integer,
          LATERAL (SELECT timestamptz '2026-01-05 08:00Z' + (j / ${PRACTITIONERS}) * interval '30 minutes' AS t,
                          timestamptz '2025-06-02 08:00Z' + j * interval '53.3 seconds' AS u) s`,
  [APPOINTMENTS, PATIENTS],
)
await db.query(
  `CREATE TEMP TABLE seed_exams AS
     SELECT k, gen_random_uuid() AS id, p.id AS patient_id, p.codalmacen,
            timestamptz '2022-03-07 09:00Z' + k * interval '2 minutes 31.1 seconds' AS performed_at
       FROM generate_series(0, $1::integer - 1) k
       JOIN seed_patients p ON p.n = k % $2::integer`,
  [EXAMS, PATIENTS],
)
await db.query(
  `INSERT INTO clinical.exams (idempresa, id, patient_id, codalmacen, practitioner, performed_at, kind,
                               status, signed_at, signed_by, created_at, updated_at, version)
   SELECT 1, id, patient_id, codalmacen, 'dr-' || k % ${PRACTITIONERS}, performed_at, 'follow_up', 'signed',
          performed_at + interval '40 minutes', 'bench', performed_at, performed_at + interval '40 minutes', 3
     FROM seed_exams`,
)
await db.query(
  `INSERT INTO clinical.findings (idempresa, id, exam_id, kind, eye, data, added_in, recorded_at, recorded_by,
                                  patient_id, codalmacen, performed_at, taken_at, signed)
   SELECT 1, gen_random_uuid(), x.id, f.kind, f.eye,
          CASE f.kind
            WHEN 'iop' THEN jsonb_build_object('mmhg', 12 + (x.k + f.m) % 16, 'method', 'goldmann',
                 'measured_at', to_char((x.performed_at + interval '10 minutes') AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
                 'cct_um', null)
            WHEN 'visual_acuity' THEN jsonb_build_object('kind', 'best_corrected', 'value', '6/9', 'notation', 'snellen_m',
                 'logmar', 0.18, 'distance_m', 6, 'chart', null)
            ELSE jsonb_build_object('kind', 'manifest', 'sphere', -1.25, 'cylinder', -0.5, 'axis', 90, 'add', null, 'prism', null)
          END,
          2, x.performed_at + interval '20 minutes', 'bench', x.patient_id, x.codalmacen, x.performed_at,
          CASE f.kind WHEN 'iop' THEN x.performed_at + interval '10 minutes' ELSE x.performed_at END, true
     FROM seed_exams x
    CROSS JOIN (VALUES (0, 'iop', 'right'), (1, 'iop', 'left'), (2, 'visual_acuity', 'right'),
                       (3, 'visual_acuity', 'left'), (4, 'refraction', 'right'), (5, 'refraction', 'left'))
          AS f (m, kind, eye)
    WHERE x.k * ${PER_EXAM} + f.m < $1::integer`,
  [OBSERVATIONS],
)
// Autovacuum is off on this machine: statistics as autovacuum would keep them.
const SEEDED_TABLES = [
  'patients.patients',
  'patients.patient_counts',
  'appointments.practitioners',
  'appointments.appointments',
  'appointments.appointment_counts',
  'appointments.calendar',
  'clinical.exams',
  'clinical.findings',
]
for (const t of SEEDED_TABLES) await db.query(`ANALYZE ${t}`)
await db.query('DROP TABLE seed_patients, seed_exams')
const seeded = (
  await db.query(
    `SELECT (SELECT count(*) FROM patients.patients WHERE idempresa = 1)::int AS "Patient",
            (SELECT count(*) FROM appointments.appointments WHERE idempresa = 1)::int AS "Appointment",
            (SELECT count(*) FROM clinical.findings WHERE idempresa = 1)::int AS "Observation"`,
  )
).rows[0]
const total = TYPES.reduce((s, t) => s + seeded[t], 0)
const seedS = sec() - seedStarted
console.log(`seeded ${JSON.stringify(seeded)} in ${seedS.toFixed(0)} s`)

const stack = await startStack(base, SERVICES)
// Interrupted: the vhost and broker users go too (lib.mjs's exit handler stops the processes and
// drops the database and its roles).
for (const signal of ['SIGINT', 'SIGTERM'])
  process.on(signal, () => void stack.stop().finally(() => process.exit(130)))
const { api, procs } = stack
const origin = new URL(api).origin
/** The gateway answers with its PUBLIC_BASE_URL (not set by startStack): the same path on this origin. */
const local = (url) => {
  const u = new URL(url)
  return `${origin}${u.pathname}${u.search}`
}
const headers = { 'x-service-token': token, accept: 'application/fhir+json' }
const PROCS = ['gateway', ...SERVICES]
const status = (pid) => readFileSync(`/proc/${pid}/status`, 'utf8')
const kib = (text, field) => Number(new RegExp(`${field}:\\s+(\\d+)`).exec(text)[1])
const rssIdle = Object.fromEntries(PROCS.map((n) => [n, kib(status(procs[n].pid), 'VmRSS') / 1024]))

// PostgreSQL backends of this database (the services' pools), sampled from another database so
// that the sampling is none of them; CPU per pid, the last reading kept when one goes away.
const mon = new pg.Client({ connectionString: base.DATABASE_URL.replace(/\/[^/]+$/, '/postgres') })
await mon.connect()
const backendCpu = new Map()
const readBackends = async () => {
  const { rows } = await mon.query('SELECT pid FROM pg_stat_activity WHERE datname = $1', [datname])
  for (const { pid } of rows)
    try {
      backendCpu.set(pid, cpuSeconds(pid))
    } catch {
      // gone meanwhile: its last reading stays
    }
  return [...backendCpu.values()].reduce((a, b) => a + b, 0)
}
const snapshot = async () => ({
  ...Object.fromEntries(PROCS.map((n) => [n, cpuSeconds(procs[n].pid)])),
  postgres: await readBackends(),
  client: process.cpuUsage().user / 1e6 + process.cpuUsage().system / 1e6,
  machine: machineCpu(),
  at: sec(),
})
const cpuBetween = (a, b) => ({
  ...Object.fromEntries([...PROCS, 'postgres', 'client'].map((k) => [k, b[k] - a[k]])),
  machineBusyCores:
    ((b.machine.busy - a.machine.busy) / (b.machine.total - a.machine.total)) * os.cpus().length,
  seconds: b.at - a.at,
})

// RSS of every process every 200 ms; the backends' CPU every second (their pids come and go).
const peak = Object.fromEntries(PROCS.map((n) => [n, 0]))
let samples = 0
let maxGapMs = 0
let lastSample = performance.now()
const rssTimer = setInterval(() => {
  const now = performance.now()
  maxGapMs = Math.max(maxGapMs, now - lastSample)
  lastSample = now
  samples++
  for (const n of PROCS) peak[n] = Math.max(peak[n], kib(status(procs[n].pid), 'VmRSS') / 1024)
}, 200)
const backendTimer = setInterval(() => void readBackends().catch(() => undefined), 1000)
const loads = []
const loadTimer = setInterval(() => loads.push(os.loadavg()[0]), 5000)

// Kick-off.
const before = await snapshot()
const t0 = sec()
const kick = await fetch(`${api}/fhir/R4/$export?_type=${TYPES.join(',')}`, {
  headers: { ...headers, prefer: 'respond-async' },
})
const kickBody = await kick.text()
if (kick.status !== 202) throw new Error(`kick-off answered ${kick.status}: ${kickBody}`)
const statusUrl = local(kick.headers.get('content-location'))
console.log(`kick-off 202 in ${((sec() - t0) * 1000).toFixed(0)} ms; status ${statusUrl}`)

// The status polled as the IG says: wait what Retry-After asks, until it is not 202.
const progress = []
let polls = 0
let manifest
for (;;) {
  const res = await fetch(statusUrl, { headers })
  polls++
  if (res.status === 200) {
    manifest = await res.json()
    break
  }
  const text = await res.text()
  if (res.status !== 202) throw new Error(`status answered ${res.status}: ${text}`)
  const p = res.headers.get('x-progress') ?? ''
  progress.push({ at: sec() - t0, p })
  if (polls % 10 === 1) console.log(`${(sec() - t0).toFixed(0)} s: ${p}`)
  if (sec() - t0 > 3 * 3600) throw new Error('the export took more than 3 hours')
  await sleep(Number(res.headers.get('retry-after') ?? 1) * 1000)
}
const tManifest = sec() - t0
const exported = await snapshot()
console.log(`manifest after ${tManifest.toFixed(1)} s: ${manifest.output.length} files`)

// Every file, one after another, streamed: lines counted, each line's type and id read from its
// first bytes (`{"resourceType":"X","id":"..."`), ids kept per type to find a repeated one.
const HEAD = /^\{"resourceType":"([A-Za-z]+)","id":"([^"]+)"/
const lines = Object.fromEntries(TYPES.map((t) => [t, 0]))
const ids = Object.fromEntries(TYPES.map((t) => [t, new Set()]))
const problems = []
let bytes = 0
let firstByte = null
for (const f of manifest.output) {
  const res = await fetch(local(f.url), {
    headers: { 'x-service-token': token, accept: 'application/fhir+ndjson' },
  })
  if (res.status !== 200) throw new Error(`${f.url} answered ${res.status}: ${await res.text()}`)
  let head = '' // the current line's first bytes, until they hold its type and id
  let headDone = false
  let fileLines = 0
  const line = () => {
    const m = HEAD.exec(head)
    if (!m || m[1] !== f.type) {
      if (problems.length < 5) problems.push(`${f.url}: a line starts ${head.slice(0, 80)}`)
    } else if (ids[f.type].has(m[2])) {
      if (problems.length < 5) problems.push(`${f.type}/${m[2]} twice`)
    } else ids[f.type].add(m[2])
  }
  for await (const bytesRead of res.body) {
    const chunk = Buffer.from(bytesRead.buffer, bytesRead.byteOffset, bytesRead.byteLength)
    if (firstByte === null) firstByte = sec() - t0
    bytes += chunk.length
    let at = 0
    for (;;) {
      const nl = chunk.indexOf(10, at)
      const end = nl === -1 ? chunk.length : nl
      if (!headDone && end > at) {
        head += chunk.toString('latin1', at, Math.min(end, at + 120 - head.length))
        headDone = head.length >= 120
      }
      if (nl === -1) break
      line()
      fileLines++
      head = ''
      headDone = false
      at = nl + 1
    }
  }
  if (head !== '') problems.push(`${f.url}: its last line has no newline`)
  if (fileLines !== f.count) problems.push(`${f.url}: ${fileLines} lines, the manifest says ${f.count}`)
  lines[f.type] += fileLines
}
const tEnd = sec() - t0
const downloaded = await snapshot()
clearInterval(rssTimer)
clearInterval(backendTimer)
clearInterval(loadTimer)
const load1 = os.loadavg()
const hwm = Object.fromEntries(PROCS.map((n) => [n, kib(status(procs[n].pid), 'VmHWM') / 1024]))
const rssAfter = Object.fromEntries(PROCS.map((n) => [n, kib(status(procs[n].pid), 'VmRSS') / 1024]))

const manifestCounts = Object.fromEntries(
  TYPES.map((t) => [t, manifest.output.filter((f) => f.type === t).reduce((s, f) => s + f.count, 0)]),
)
const filesOf = Object.fromEntries(TYPES.map((t) => [t, manifest.output.filter((f) => f.type === t).length]))
for (const t of TYPES) {
  if (manifestCounts[t] !== seeded[t])
    problems.push(`${t}: manifest ${manifestCounts[t]}, seeded ${seeded[t]}`)
  if (ids[t].size !== seeded[t]) problems.push(`${t}: ${ids[t].size} distinct ids, seeded ${seeded[t]}`)
}
if (manifest.error.length) problems.push(`error files: ${JSON.stringify(manifest.error)}`)
const countsOk = problems.length === 0

// When each type's pages ran, from the status's X-Progress (1 s resolution: the polls).
const typeSpans = TYPES.map((t) => {
  const seen = progress.filter((x) => x.p.includes(`; ${t} (`))
  return seen.length ? { type: t, from: seen[0].at, to: seen.at(-1).at } : { type: t, from: NaN, to: NaN }
})
// The export's storage: its chunks in the gateway's schema (PostgreSQL keeps the files).
const storage = (
  await db.query(
    `SELECT sum(pg_total_relation_size(c.oid))::bigint AS bytes FROM pg_class c
      WHERE c.relname IN ('fhir_export_chunks', 'fhir_export_files', 'fhir_exports') AND c.relkind = 'r'`,
  )
).rows[0].bytes

// The comparison, in the same run: the same resources paged through the same FHIR searches the
// export worker makes (the gateway's FHIR search, 1,000 a page, `_total=none`, next links), without
// writing them anywhere: what reading alone costs on this machine now.
let paging = null
if (PAGING) {
  const p0 = await snapshot()
  let n = 0
  let reqs = 0
  const pageMs = {}
  for (const t of TYPES) {
    let url = `${api}/fhir/R4/${t}?_sort=_lastUpdated&_count=1000&_total=none`
    pageMs[t] = []
    while (url) {
      const p = performance.now()
      const res = await fetch(url, { headers })
      reqs++
      if (res.status !== 200) throw new Error(`${url} answered ${res.status}: ${await res.text()}`)
      const b = await res.json()
      pageMs[t].push(performance.now() - p)
      n += b.entry?.length ?? 0
      const next = b.link?.find((l) => l.relation === 'next')?.url
      url = next ? local(next) : null
    }
  }
  const p1 = await snapshot()
  // A page's time early and late in each type: a search whose cursor no index serves slows down
  // as the pages go on (each reads what the pages before it read).
  const median = (a) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)] ?? NaN
  const tenth = (a) => Math.max(1, Math.floor(a.length / 10))
  paging = {
    n,
    reqs,
    cpu: cpuBetween(p0, p1),
    pages: TYPES.map(
      (t) =>
        `${t} ${median(pageMs[t].slice(0, tenth(pageMs[t]))).toFixed(0)} / ${median(pageMs[t].slice(-tenth(pageMs[t]))).toFixed(0)} ms`,
    ).join(', '),
  }
  console.log(`paging alone: ${n} in ${paging.cpu.seconds.toFixed(1)} s`)
}

await mon.end()
await db.end()
await stack.stop()

const phase = {
  export: cpuBetween(before, exported),
  download: cpuBetween(exported, downloaded),
}
const rate = (n, s) => `${fmt(n / s)}/s`
const cpuRow = (name, c) =>
  `| ${name} | ${c.seconds.toFixed(1)} | ${PROCS.map((n) => c[n].toFixed(1)).join(' | ')} | ${c.postgres.toFixed(1)} | ${c.client.toFixed(1)} | ${c.machineBusyCores.toFixed(2)} |`
const loadDuring = loads.length ? `${Math.min(...loads).toFixed(2)}-${Math.max(...loads).toFixed(2)}` : 'n/a'
const mib = (v) => v.toFixed(0)

record(
  process.env.RESULT ?? 'export',
  `# FHIR Bulk Data export end to end (issue 44)

${machine()}. Gateway, patients, appointments and clinical from the build (LOG_LEVEL=warn${process.env.BENCH_NODE_ARGS ? `, node ${process.env.BENCH_NODE_ARGS}` : ''}), PostgreSQL 15
and RabbitMQ on the same machine; the client (this script) too. One company: ${fmt(seeded.Patient)} patients,
${fmt(seeded.Appointment)} appointments, ${fmt(seeded.Observation)} Observations (${fmt(EXAMS)} signed exams, ${PER_EXAM} findings each), ${fmt(total)}
resources, seeded with SQL and ANALYZEd in ${seedS.toFixed(0)} s. \`GET /api/fhir/R4/$export?_type=${TYPES.join(',')}\`,
status polled as Retry-After says (${polls} polls), then the ${manifest.output.length} files downloaded one after another.
Load average (1 min) ${load0[0].toFixed(2)} before, ${loadDuring} during (every 5 s), ${load1[0].toFixed(2)} after.

| measure | value |
| --- | --- |
| end to end: kick-off to the last byte of the last file | ${tEnd.toFixed(1)} s, **${rate(total, tEnd)}** (target 1,000/s) |
| export: kick-off to the 200 manifest | ${tManifest.toFixed(1)} s, ${rate(total, tManifest)} |
| download: ${manifest.output.length} files, ${fmt(bytes / 2 ** 20)} MiB | ${(tEnd - tManifest).toFixed(1)} s, ${rate(total, tEnd - tManifest)}, ${fmt(bytes / 2 ** 20 / (tEnd - tManifest), 1)} MiB/s |
| first byte of the first file, from kick-off | ${firstByte.toFixed(1)} s |
| per type (from X-Progress, ±1 s) | ${typeSpans.map((s) => `${s.type} ${(s.to - s.from + 1).toFixed(0)} s (${rate(seeded[s.type], s.to - s.from + 1)})`).join(', ')} |
| counts: seeded = manifest = lines, ids unique | ${countsOk ? 'yes' : `**no**: ${problems.join('; ')}`} (${TYPES.map((t) => `${t} ${fmt(seeded[t])} / ${fmt(manifestCounts[t])} / ${fmt(lines[t])} in ${filesOf[t]} files`).join(', ')}) |
| the export's tables in PostgreSQL afterwards | ${fmt(storage / 2 ** 20)} MiB |
${paging ? `| the same searches paged alone (no export), same run | ${paging.cpu.seconds.toFixed(1)} s, ${rate(paging.n, paging.cpu.seconds)}, ${paging.reqs} pages; export / paging ${(tManifest / paging.cpu.seconds).toFixed(2)}x the time |\n| a page of 1,000 (paging alone), median of the first / last tenth of each type's pages | ${paging.pages} |\n` : ''}
RSS, MiB (target under 200 each): peak sampled every 200 ms over the export and download (${samples}
samples, longest gap ${maxGapMs.toFixed(0)} ms), idle before, after, and VmHWM (the process's peak since it started):

| process | idle | peak during | after | VmHWM |
| --- | ---: | ---: | ---: | ---: |
${PROCS.map((n) => `| ${n} | ${mib(rssIdle[n])} | ${mib(peak[n])} | ${mib(rssAfter[n])} | ${mib(hwm[n])} |`).join('\n')}

CPU seconds per phase (from /proc; PostgreSQL: this database's backends; machine: busy cores of ${os.cpus().length}):

| phase | wall s | ${PROCS.join(' | ')} | PostgreSQL | client | machine busy cores |
| --- | ---: | ${PROCS.map(() => '---:').join(' | ')} | ---: | ---: | ---: |
${cpuRow('export (kick-off to manifest)', phase.export)}
${cpuRow('download', phase.download)}
${paging ? cpuRow('paging alone (comparison)', paging.cpu) : ''}
`,
)
if (!countsOk) console.error(problems.join('\n'))
process.exit(countsOk ? 0 : 1)
