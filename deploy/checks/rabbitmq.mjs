// deploy/rabbitmq/definitions.json: one broker user per app of services.json (clinic-<name>), no
// password in the file, vhost permissions for each, and topic permissions on clinic.events that
// give every event type of the platform's contracts to exactly one user (audit: none), so that no
// service can publish another's events.
import { existsSync } from 'node:fs'
import path from 'node:path'
import { APPS as apps, namesOf, read, report, root, SERVICES } from './lib.mjs'

const FILE = 'deploy/rabbitmq/definitions.json'
const VHOST = 'clinic'
const EXCHANGE = 'clinic.events'

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
  // Writes go to clinic.events and the user's own queues and retry exchange: never amq.default (a
  // write there reaches any queue) nor another service's queue.
  for (const s of apps) {
    const u = namesOf(s).brokerUser
    const write = (defs.permissions ?? []).find((p) => p.user === u && p.vhost === VHOST)?.write
    if (write === undefined) continue
    const re = regex(`${u} write`, write)
    if (re.test('amq.default')) problems.push(`${u}: may write to amq.default`)
    for (const o of apps)
      for (const c of o === s ? [] : (o.consumes ?? []))
        for (const q of [c.queue, `${c.queue}.retry`, `${c.queue}.delay`, `${c.queue}.dlq`])
          if (re.test(q)) problems.push(`${u}: may write to ${q}, ${o.name}'s`)
  }
  const audit = writers.get(namesOf('audit').brokerUser)
  if (audit && types.some((t) => audit.test(t))) problems.push('clinic-audit must publish nothing')
  report(
    FILE,
    problems,
    `${users.length} users, topic permissions cover ${types.length} event types once each`,
  )
}
