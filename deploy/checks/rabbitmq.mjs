// deploy/rabbitmq/definitions.json: one broker user per app of services.json (clinic-<name>), no
// password in the file, the least vhost permissions for each, topic permissions on clinic.events
// that give every event type of the platform's contracts to exactly one user (audit: none), so that
// no service can publish another's events, and the topology (quorum queues, internal retry
// exchanges) that services no longer declare.
import { existsSync } from 'node:fs'
import path from 'node:path'
import { APPS as apps, namesOf, read, report, root, SERVICES } from './lib.mjs'

const FILE = 'deploy/rabbitmq/definitions.json'
const VHOST = 'clinic'
const EXCHANGE = 'clinic.events'
const DLX = 'clinic.events.dlx'

/**
 * The event types of the registry: the top-level keys of each publisher's contracts file
 * (packages/platform/src/contracts/<name>.ts, services.json `publishes`).
 */
function eventTypes() {
  const files = SERVICES.map((s) => `packages/platform/src/contracts/${s}.ts`)
  return files.flatMap((f) =>
    [...(existsSync(path.join(root, f)) ? read(f) : '').matchAll(/^ {2}'([a-z_]+(?:\.[a-z_]+)+)':/gm)].map(
      (m) => m[1],
    ),
  )
}

export function checkRabbitDefinitions() {
  const problems = []
  let defs
  try {
    defs = JSON.parse(read(FILE))
  } catch (err) {
    report(FILE, [`not valid JSON: ${err.message}`], '')
    return
  }
  const wanted = SERVICES.map((s) => namesOf(s).brokerUser)
  const users = (defs.users ?? []).map((u) => u.name)
  for (const u of wanted) if (!users.includes(u)) problems.push(`no user ${u}`)
  for (const u of users) if (!wanted.includes(u)) problems.push(`user ${u} is no app of services.json`)
  for (const u of defs.users ?? [])
    if (u.password || u.password_hash) problems.push(`user ${u.name} has a password: set it with rabbitmqctl`)
  if (!(defs.vhosts ?? []).some((v) => v.name === VHOST)) problems.push(`no vhost ${VHOST}`)

  const regex = (where, s) => {
    try {
      return new RegExp(s)
    } catch {
      problems.push(`${where}: ${JSON.stringify(s)} is not a regular expression`)
      return /(?!)/
    }
  }
  const writers = new Map()
  for (const u of wanted) {
    const perms = (defs.permissions ?? []).filter((p) => p.user === u && p.vhost === VHOST)
    if (perms.length !== 1) problems.push(`${u}: needs one permissions entry on vhost ${VHOST}`)
    for (const p of perms) for (const k of ['configure', 'write', 'read']) regex(`${u} ${k}`, p[k])
    // Without topic permissions on the exchange, RabbitMQ lets a user publish any routing key.
    const topics = (defs.topic_permissions ?? []).filter(
      (t) => t.user === u && t.vhost === VHOST && t.exchange === EXCHANGE,
    )
    if (topics.length !== 1) problems.push(`${u}: needs one topic permission on ${EXCHANGE}`)
    else writers.set(u, regex(`${u} topic write`, topics[0].write))
  }
  const types = eventTypes()
  if (!types.length) problems.push('no event types found in packages/platform/src/contracts/')
  for (const type of types) {
    const by = [...writers].filter(([, re]) => re.test(type)).map(([u]) => u)
    if (by.length !== 1)
      problems.push(`${type}: publishable by ${by.length ? by.join(', ') : 'no user'}, must be exactly one`)
  }
  // The least that works: nobody configures; writes go to clinic.events (publishers) and the
  // dead-letter exchange (consumers), never amq.default, a queue or a retry exchange; a consumer
  // reads its own work queue alone, never the dead-letter exchange, a .wait, a .dlq or another's.
  const exchanges = (defs.exchanges ?? []).map((e) => e.name)
  const queues = (defs.queues ?? []).map((q) => q.name)
  for (const s of apps) {
    const u = namesOf(s).brokerUser
    const p = (defs.permissions ?? []).find((x) => x.user === u && x.vhost === VHOST)
    if (!p) continue
    if (p.configure !== '^$') problems.push(`${u}: configures ${p.configure}; services configure nothing`)
    const write = regex(`${u} write`, p.write)
    const read = regex(`${u} read`, p.read)
    const own = (s.consumes ?? []).map((c) => c.queue)
    for (const x of ['amq.default', ...exchanges])
      if (write.test(x) && x !== EXCHANGE && !(x === DLX && own.length))
        problems.push(`${u}: may write to ${x}`)
    for (const q of queues) if (write.test(q)) problems.push(`${u}: may write to the queue ${q}`)
    for (const x of [...exchanges, ...queues])
      if (read.test(x) && !own.includes(x)) problems.push(`${u}: may read ${x}`)
  }
  // Every queue replicated (RabbitMQ 4 clusters: classic queues are not), each work queue
  // dead-lettering into its own wait exchange, which, like the way back, takes no client's publish.
  for (const q of defs.queues ?? [])
    if (q.arguments?.['x-queue-type'] !== 'quorum') problems.push(`queue ${q.name}: not a quorum queue`)
  for (const a of apps)
    for (const c of a.consumes ?? []) {
      const q = (defs.queues ?? []).find((x) => x.name === c.queue)
      if (!q) problems.push(`no queue ${c.queue} (${a.name} consumes it)`)
      else if (q.arguments?.['x-dead-letter-exchange'] !== `${c.queue}.wait`)
        problems.push(`queue ${c.queue}: must dead-letter into ${c.queue}.wait`)
      for (const x of [`${c.queue}.wait`, `${c.queue}.back`])
        if (!(defs.exchanges ?? []).some((e) => e.name === x && e.internal === true))
          problems.push(`exchange ${x}: missing or not internal`)
    }
  const audit = writers.get(namesOf('audit').brokerUser)
  if (audit && types.some((t) => audit.test(t))) problems.push('clinic-audit must publish nothing')
  report(
    FILE,
    problems,
    `${users.length} users, topic permissions cover ${types.length} event types once each`,
  )
}
