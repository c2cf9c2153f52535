// `npm start`: install what is missing, build, migrate, then run the gateway and the services of
// packages/platform/services.json as separate processes with prefixed logs. A process that dies is started again with a growing
// delay (scripts/supervisor.mjs, logged with its exit code or signal). Ctrl-C (or SIGTERM) stops
// them all at once.
// In a terminal the services' JSON log lines are pretty-printed (pino-pretty); piped or redirected
// they pass through unchanged, one JSON object per line after the `[service] ` prefix.
import { spawn } from 'node:child_process'
import { createRequire } from 'node:module'
import path from 'node:path'
import readline from 'node:readline'
import brokerUsers from '../packages/platform/broker-users.cjs'
import {
  build,
  checkDependencies,
  defaults,
  ensureInstalled,
  loadDotEnv,
  localSecrets,
  root,
  serviceEnv,
  serviceList,
  services,
} from './lib.mjs'
import { migrateAll } from './migrate.mjs'
import { supervise } from './supervisor.mjs'

loadDotEnv()
// Secrets `.env` does not set are made once and kept in var/local-secrets.env (scripts/lib.mjs).
const env = localSecrets({ ...process.env }, { create: true })
// A development stack: webhooks may reach a receiver on this machine over plain http (Compose and
// Kubernetes leave it false: https to public addresses only).
env.WEBHOOKS_ALLOW_INSECURE ??= 'true'
// Without SMTP_URL / TWILIO_* comms writes its messages under var/outbox/ (development only:
// Compose and Kubernetes name their providers, and comms refuses to start without them).
if (!env.COMMS_DELIVERY) env.COMMS_DELIVERY = 'files'
// Demos move comms' clock (reminders, patient links) with `npm run clock -- +2d`, not in production.
env.COMMS_CLOCK_FILE ||= path.join(root, 'var', 'comms-clock')
// The links in messages point at this stack's gateway.
env.PUBLIC_BASE_URL ||= `http://127.0.0.1:${env.GATEWAY_PORT || serviceList.gateway.port}`

try {
  await checkDependencies(env)
  ensureInstalled()
  build()
  // The platform's check of services.json, once here rather than by every process in a restart loop.
  createRequire(import.meta.url)(path.join(root, 'packages/platform/dist/service-list.js')).serviceList()
  console.log('> migrating')
  migrateAll(env)
  // The broker's topology (exchanges, queues, bindings: services declare none), and each service's
  // own user with deploy's permissions, as in production: `<BROKER_USER_PREFIX>clinic-<name>` on
  // the vhost of AMQP_URL, its password derived from BROKER_ROOT_SECRET. Made or updated on every
  // start (rabbitmqctl import_definitions); queues an older release declared itself are made anew.
  env.AMQP_URL ||= defaults.AMQP_URL
  console.log('> broker topology and users')
  for (const q of await brokerUsers.retireLegacyQueues({ amqpUrl: env.AMQP_URL }))
    console.warn(
      `${q} was declared by an older release and still holds messages: it keeps its old dead-lettering until drained (deploy/README.md, "Upgrading the broker's topology")`,
    )
  await brokerUsers.createBrokerUsers({
    amqpUrl: env.AMQP_URL,
    prefix: env.BROKER_USER_PREFIX ?? '',
    rootSecret: env.BROKER_ROOT_SECRET,
  })
} catch (err) {
  console.error(err.message)
  process.exit(1)
}

const tty = Boolean(process.stdout.isTTY)
const palette = [36, 32, 33, 35, 34, 31, 96, 92, 93, 95, 94]
const color = (name) => palette[services.indexOf(name) % palette.length]
// pino-pretty as a library: one formatter for every child; lines that are not JSON pass through.
const pretty = tty
  ? (await import('pino-pretty')).prettyFactory({
      colorize: true,
      translateTime: 'SYS:HH:MM:ss.l',
      ignore: 'pid,hostname,service',
    })
  : null

function prefix(name, stream, out) {
  const label = tty ? `\x1b[${color(name)}m[${name}]\x1b[0m ` : `[${name}] `
  readline.createInterface({ input: stream }).on('line', (line) => {
    const text = pretty && line.startsWith('{') ? pretty(line).replace(/\n$/, '') : line
    out.write(
      text
        .split('\n')
        .map((l) => label + l)
        .join('\n') + '\n',
    )
  })
}

// Services first, the gateway last (it proxies to them).
const stack = supervise(
  [...services.filter((s) => s !== 'gateway'), 'gateway'].map((name) => ({
    name,
    start: () => {
      const child = spawn(process.execPath, [path.join(root, 'services', name, 'dist', 'server.js')], {
        env: serviceEnv(name, env),
        stdio: ['ignore', 'pipe', 'pipe'],
      })
      prefix(name, child.stdout, process.stdout)
      prefix(name, child.stderr, process.stderr)
      return child
    },
  })),
  { log: (line) => console.error(line) },
)

let stopping = false
function stop() {
  if (stopping) return
  stopping = true
  void stack.stop().then(() => process.exit(0))
}
process.on('SIGINT', stop)
process.on('SIGTERM', stop)

const port = env.GATEWAY_PORT || serviceList.gateway.port
const base = `http://127.0.0.1:${port}/api`
for (let i = 0; i < 120 && !stopping; i++) {
  try {
    const res = await fetch(`${base}/health`)
    if (res.ok) {
      console.log(`> Clinic API ready on ${base} (docs: ${base}/docs). Ctrl-C stops everything.`)
      break
    }
  } catch {
    /* not up yet */
  }
  await new Promise((r) => setTimeout(r, 500))
}
