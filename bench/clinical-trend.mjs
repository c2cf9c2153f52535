// A glaucoma clinic's first look at a patient: one patient's right-eye IOP over ten years,
// GET /api/clinical/patients/{id}/measurements?type=iop&eye=right, through the gateway (its
// access event committed before the answer, as for every read of patient data) with the real
// patients, clinical and audit services as processes. 10,000 patients with 20 signed exams each
// over ten years (an IOP and an acuity per eye per exam: 800,000 findings), seeded with SQL and
// ANALYZEd (autovacuum is off on this machine). Beside it, in the same run: the bare node:http
// floor answering the same bytes, a patient read through the same gateway (the house's most
// frequent audited read), and the trend statement alone in PostgreSQL (EXPLAIN ANALYZE): where a
// request's time goes. Target: p50 under 20 ms.
// Run: node bench/clinical-trend.mjs after `npm run build`. Quiet machine: nothing else running.
import pg from 'pg'
import { bareHttp, benchTenant, cpuOf, load, machine, record, startStack } from './lib.mjs'

const PATIENTS = Number(process.env.PATIENTS ?? 10_000)
const EXAMS = Number(process.env.EXAMS ?? 20)
const DURATION = Number(process.env.DURATION ?? 10)
const WARMUP = Number(process.env.WARMUP ?? 3)
/** Connections: 1 (a clinician's request alone) and a loaded clinic. */
const CONNECTIONS = (process.env.CONNECTIONS ?? '1,10,50').split(',').map(Number)

const started = Date.now()
const { env: base, token } = await benchTenant('clinic_bench_clinical', {
  services: ['patients', 'clinical', 'audit'],
  centers: ['C1', 'C2'],
})
const db = new pg.Client({ connectionString: base.DATABASE_URL })
await db.connect()
await db.query(
  `INSERT INTO patients.patients (idempresa, id, codalmacen, first_name, last_name, birth_date)
   SELECT 1, gen_random_uuid(), 'C' || (1 + i % 2), 'Nombre' || i % 997, 'Apellido' || i,
          date '1940-01-01' + (i % 25000)
     FROM generate_series(1, $1::integer) i`,
  [PATIENTS],
)
// Exams every ~6 months over ten years, signed; per exam an IOP (its own measured_at, an hour
// after the exam began) and a best-corrected acuity per eye.
await db.query(
  `INSERT INTO clinical.exams (idempresa, id, patient_id, codalmacen, practitioner, performed_at, kind,
                               status, signed_at, signed_by, created_at, updated_at, version)
   SELECT 1, gen_random_uuid(), p.id, p.codalmacen, 'dr-bench',
          timestamptz '2016-01-04 09:00Z' + (e * 182 + (hashtext(p.id::text) & 127)) * interval '1 day',
          'follow_up', 'signed', now(), 'bench', now(), now(), 3
     FROM patients.patients p CROSS JOIN generate_series(0, $1::integer - 1) e
    WHERE p.idempresa = 1`,
  [EXAMS],
)
await db.query(
  `INSERT INTO clinical.findings (idempresa, id, exam_id, kind, eye, data, added_in, recorded_by,
                                  patient_id, codalmacen, performed_at, taken_at, signed)
   SELECT 1, gen_random_uuid(), x.id, k.kind, k.eye,
          CASE k.kind
            WHEN 'iop' THEN jsonb_build_object('mmhg', 12 + (hashtext(x.id::text || k.eye) & 15), 'method', 'goldmann',
                 'measured_at', to_char((x.performed_at + interval '1 hour') AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
                 'cct_um', null)
            ELSE jsonb_build_object('kind', 'best_corrected', 'value', '6/9', 'notation', 'snellen_m', 'logmar', 0.18,
                 'distance_m', 6, 'chart', null)
          END,
          2, 'bench', x.patient_id, x.codalmacen, x.performed_at,
          CASE k.kind WHEN 'iop' THEN x.performed_at + interval '1 hour' ELSE x.performed_at END, true
     FROM clinical.exams x
    CROSS JOIN (VALUES ('iop', 'right'), ('iop', 'left'), ('visual_acuity', 'right'), ('visual_acuity', 'left'))
          AS k (kind, eye)
    WHERE x.idempresa = 1`,
)
// Autovacuum is off on this machine: statistics as autovacuum would keep them.
for (const t of ['patients.patients', 'patients.patient_counts', 'clinical.exams', 'clinical.findings'])
  await db.query(`ANALYZE ${t}`)
const counts = (
  await db.query(
    `SELECT (SELECT count(*) FROM clinical.exams) AS exams, (SELECT count(*) FROM clinical.findings) AS findings`,
  )
).rows[0]
const ids = (await db.query('SELECT id FROM patients.patients WHERE idempresa = 1 LIMIT 1000')).rows.map(
  (r) => r.id,
)
const seededS = (Date.now() - started) / 1000

// The statement alone: the plan and its time for one patient, as the service sends it (under the
// company's row-level security, as the service's role would see it).
const plan = (
  await db.query(
    `EXPLAIN (ANALYZE, BUFFERS)
     SELECT id, exam_id, eye, data, performed_at, taken_at FROM clinical.findings
      WHERE idempresa = 1 AND patient_id = $1 AND kind = 'iop' AND state = 'live' AND signed AND eye = 'right'
      ORDER BY taken_at, id LIMIT 500`,
    [ids[0]],
  )
).rows.map((r) => r['QUERY PLAN'])
const planMs = Number(/Execution Time: ([\d.]+)/.exec(plan.join('\n'))?.[1])

const stack = await startStack(base, ['patients', 'clinical', 'audit'])
const headers = { 'x-service-token': token }
const trendPath = (id) => `/api/clinical/patients/${id}/measurements?type=iop&eye=right`
const sample = await (
  await fetch(`${stack.api.replace(/\/api$/, '')}${trendPath(ids[0])}`, { headers })
).text()
const points = JSON.parse(sample).data.length

const rows = []
/** Where a request's time goes: CPU ms per request in each process of the stack, over the row's load. */
const SERVED_BY = ['gateway', 'clinical', 'patients', 'audit']
const cpu = () => Object.fromEntries(SERVED_BY.map((s) => [s, cpuOf([stack.procs[s].pid])]))
const run = async (name, url, o = {}) => {
  for (const connections of CONNECTIONS) {
    if (!o.bare) await load({ url, headers, connections, duration: WARMUP, ...o.opts })
    const before = o.bare ? null : cpu()
    const r = await load({ url, headers, connections, duration: DURATION, ...o.opts })
    const after = o.bare ? null : cpu()
    const perRequest = SERVED_BY.map((s) =>
      before ? (((after[s] - before[s]) / r.requests.total) * 1000).toFixed(2) : '',
    )
    rows.push(
      `| ${name} | ${connections} | ${r.requests.average.toFixed(0)} | ${r.latency.p50} | ${r.latency.p90} | ${r.latency.p99} | ${r.non2xx} | ${perRequest.join(' | ')} |`,
    )
    console.log(rows.at(-1))
  }
}
const rotating = (path) => {
  let i = 0
  return { requests: [{ method: 'GET', setupRequest: (r) => ({ ...r, path: path(ids[i++ % ids.length]) }) }] }
}

// The floor of this machine in this run: a bare node:http server answering the trend's bytes.
const bare = await bareHttp(sample)
await run('bare node:http, the same bytes', bare.url, { bare: true })
bare.stop()
await run('trend through the gateway (one patient of 1,000 per request)', stack.api, {
  opts: rotating(trendPath),
})
await run('patient read through the gateway (the same patients)', stack.api, {
  opts: rotating((id) => `/api/patients/${id}`),
})
await stack.stop()
await db.end()

record(
  'clinical-trend',
  `# Clinical trend: one patient's right-eye IOP over ten years

${machine()}. ${PATIENTS.toLocaleString('en')} patients, ${EXAMS} signed exams each over ten years: ${Number(counts.exams).toLocaleString('en')} exams, ${Number(counts.findings).toLocaleString('en')} findings (seeded and ANALYZEd in ${seededS.toFixed(0)} s). Each answer: ${points} measurements, ${sample.length} bytes. Gateway, patients, clinical and audit as processes; every read committed to the access trail before it is answered. autocannon on the same 2 cores, ${DURATION} s per row after ${WARMUP} s of warm-up.

The statement alone (EXPLAIN ANALYZE, one patient): ${planMs} ms.

CPU ms per request by process (from /proc over each row's load; the audit drain that follows a row is not in it):

| what | connections | req/s | p50 ms | p90 ms | p99 ms | non-2xx | gateway | clinical | patients | audit |
| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |
${rows.join('\n')}

\`\`\`
${plan.join('\n')}
\`\`\`
`,
)
