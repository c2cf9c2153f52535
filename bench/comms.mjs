// Comms end to end: POST /api/comms/send through the gateway -> outbox -> RabbitMQ -> delivery
// worker -> SMTP (nodemailer pool) -> a local SMTP sink. Measures accepted sends per second,
// delivered emails per second (the worker draining the backlog), and accepted-to-sent latency at
// a steady 100 sends per second. Targets: 500 accepted/s, 200 delivered/s, p99 < 1 s.
// Run: node bench/comms.mjs after `npm run build` (a database and a vhost of its own).
import pg from 'pg'
import { benchTenant, cpuSeconds, load, machine, record, smtpSink, startStack } from './lib.mjs'

const sink = await smtpSink()
const { env: base, token } = await benchTenant('clinic_bench_comms', {
  services: ['patients', 'comms'],
  centers: ['ALM1'],
})
// Every send goes to one guardian's address: the messaging quotas (10 an hour per address) are
// raised out of the way; each send still takes that address's lock and the company's daily count.
const stack = await startStack(base, ['patients', 'comms'], {
  SMTP_URL: sink.url,
  COMMS_HOURLY_ADDRESS_LIMIT: '10000',
  COMMS_DAILY_EMAIL_LIMIT: '10000000',
})
const { api, env, procs } = stack

const headers = { 'x-service-token': token, 'content-type': 'application/json' }
const patient = await (
  await fetch(`${api}/patients`, {
    method: 'POST',
    headers,
    body: JSON.stringify({
      first_name: 'Nina',
      last_name: 'Ficticia',
      birth_date: '2018-03-01',
      codalmacen: 'ALM1',
      requires_legal_guardian: true,
      guardian: { name: 'Tutora Ficticia', relationship: 'mother', email: 'tutora@example.test' },
    }),
  })
).json()
const send = {
  url: `${api}/comms/send`,
  method: 'POST',
  headers,
  body: JSON.stringify({
    patient_id: patient.id,
    subject: 'Recordatorio',
    body: 'Cita el lunes a las 10:00.',
  }),
}

const db = new pg.Client({ connectionString: env.DATABASE_URL })
await db.connect()
const counts = async () =>
  Object.fromEntries(
    (await db.query('SELECT status, count(*)::int AS n FROM comms.messages GROUP BY status')).rows.map(
      (r) => [r.status, r.n],
    ),
  )
/** Waits until nothing is queued or sending; returns the seconds it took from `since`. */
const drained = async (since) => {
  for (;;) {
    const c = await counts()
    if (!c.queued && !c.sending) return (Date.now() - since) / 1000
    await new Promise((r) => setTimeout(r, 100))
  }
}
const cpu = () => Object.fromEntries(Object.entries(procs).map(([n, p]) => [n, cpuSeconds(p.pid)]))

// 1. Accepted per second: as many sends as 50 connections get through in 10 s.
const cpu0 = cpu()
const burstStart = Date.now()
const burst = await load({ ...send, connections: 50, duration: 10 })
const accepted = burst['2xx']
const acceptedPerS = accepted / 10
// 2. Delivered per second: the worker draining what the burst queued.
const burstDrainS = await drained(burstStart)
const cpu1 = cpu()
const sentInBurst = (await counts()).sent ?? 0
const deliveredPerS = sentInBurst / burstDrainS

// 3. Latency at a steady 100 sends per second for 10 s: created_at -> sent_at.
await db.query("UPDATE comms.messages SET template = 'burst'")
const steadyStart = Date.now()
const steady = await load({ ...send, connections: 10, duration: 10, overallRate: 100 })
await drained(steadyStart)
const lat = (
  await db.query(`SELECT
      percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM sent_at - created_at)) AS p50,
      percentile_cont(0.99) WITHIN GROUP (ORDER BY extract(epoch FROM sent_at - created_at)) AS p99,
      count(*)::int AS n
    FROM comms.messages WHERE template IS NULL AND status = 'sent'`)
).rows[0]
const final = await counts()

const perSend = (name) => (((cpu1[name] - cpu0[name]) / accepted) * 1e6).toFixed(0)
record(
  'comms',
  `# comms end to end: send through the gateway, deliver over SMTP

${machine()}. Gateway, patients and comms as processes from the build (LOG_LEVEL=warn), a
database and a RabbitMQ vhost of their own, comms' SMTP pool (SMTP_POOL_SIZE=5) into a local
smtp-server sink; the load generator (autocannon) on the same cores.

| measure | target | measured |
| --- | ---: | ---: |
| accepted \`POST /api/comms/send\` per second (50 connections, 10 s) | 500 | ${acceptedPerS.toFixed(0)} (p50 ${burst.latency.p50} ms, p99 ${burst.latency.p99} ms, non-2xx ${burst.non2xx}) |
| delivered per second (the worker draining the burst's ${sentInBurst} messages) | 200 | ${deliveredPerS.toFixed(0)} |
| accepted to sent at a steady 100/s: p50 / p99 (${lat.n} messages) | p99 < 1 s | ${(lat.p50 * 1000).toFixed(0)} ms / ${(lat.p99 * 1000).toFixed(0)} ms |

CPU per accepted send during the burst and its drain (µs): gateway ${perSend('gateway')}, patients
${perSend('patients')} (the recipient lookup), comms ${perSend('comms')} (route, outbox, worker, SMTP).
Steady phase: ${steady['2xx']} accepted, non-2xx ${steady.non2xx}. Messages by status at the end:
${JSON.stringify(final)}; the sink received ${sink.received()}.
`,
)

await db.end()
await stack.stop()
sink.close()
process.exit(0)
