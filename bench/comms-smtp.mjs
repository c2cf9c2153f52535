// Delivered emails per second into a local SMTP sink: comms' SmtpProvider (nodemailer, pooled
// connections) against an smtp-server that accepts everything. Provider throughput only: the
// worker's claim and outcome updates and the broker are not in this number.
// Run: node bench/comms-smtp.mjs after `npm run build`.
import { createRequire } from 'node:module'
import path from 'node:path'
import { ROOT, machine, record, smtpSink } from './lib.mjs'

const require = createRequire(path.join(ROOT, 'services', 'comms', 'package.json'))
const { SmtpProvider } = require(
  path.join(ROOT, 'services', 'comms', 'dist', 'providers', 'smtp-provider.js'),
)

const N = Number(process.env.N ?? 2000)
const CONCURRENCY = 50
const sink = await smtpSink()
const url = sink.url

const rows = []
for (const pool of [1, 5]) {
  const provider = new SmtpProvider(url, 'Clinic <no-reply@clinic.example>', pool)
  const latencies = []
  let next = 0
  const started = process.hrtime.bigint()
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < N) {
        const i = next++
        const t = process.hrtime.bigint()
        await provider.send({
          id: `bench-${pool}-${i}`,
          channel: 'email',
          name: 'Tutora Ficticia',
          address: `bench${i}@example.test`,
          subject: 'Recordatorio',
          body: 'Le recordamos su cita del lunes a las 10:00.',
        })
        latencies.push(Number(process.hrtime.bigint() - t) / 1e6)
      }
    }),
  )
  const seconds = Number(process.hrtime.bigint() - started) / 1e9
  provider.close()
  latencies.sort((a, b) => a - b)
  rows.push(
    `| ${pool} | ${N} | ${(N / seconds).toFixed(0)} | ${latencies[Math.floor(latencies.length * 0.5)].toFixed(1)} | ${latencies[Math.floor(latencies.length * 0.99)].toFixed(1)} |`,
  )
}
sink.close()

record(
  'comms-smtp',
  `# comms: emails delivered per second into a local SMTP sink

${machine()}. SmtpProvider (nodemailer pooled transport) -> smtp-server on 127.0.0.1, ${CONCURRENCY} sends in flight.
Target: 200 delivered per second. Not measured here: the worker's database claim and
outcome updates, and accepted POST /comms/send per second through the gateway.

| pool connections | emails | per second | p50 ms | p99 ms |
| ---: | ---: | ---: | ---: | ---: |
${rows.join('\n')}

Received by the sink: ${sink.received()}.
`,
)
