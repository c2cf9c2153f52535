'use strict'
// Local stacks (npm start, the e2e stack, the faults harness, the benches, service tests that run
// consumers) import the broker's topology (topology.cjs) as the administrator and run each service
// as its own broker user with the permissions deploy/rabbitmq/definitions.json gives it, as deploy
// does, so the broker's checks (user_id, write and topic
// permissions) are tested where they run. Broker users are machine-wide, so a stack's users carry
// a prefix of its own (`<prefix>clinic-<name>`; consumers expect their sources' users after the
// same prefix, event-origin.ts) and are removed with the stack. Each password is derived from a
// root secret of the stack, so the service env (scripts/service-env.cjs) and the import agree
// without passing passwords around. CommonJS, beside naming.cjs, for the scripts (ESM), the e2e
// stack and @clinic/platform/testing alike. rabbitmqctl (as root, or as the broker's user), or in
// the broker's container through `docker exec` (the e2e suites' broker in Testcontainers).
const { execFile, spawn } = require('node:child_process')
const { createHash, createHmac, randomBytes } = require('node:crypto')
const { chmod, mkdtemp, readFile, rm, writeFile } = require('node:fs/promises')
const { tmpdir } = require('node:os')
const path = require('node:path')
const { promisify } = require('node:util')
const { apps, namesOf } = require('./naming.cjs')
const { topology, workQueues } = require('./topology.cjs')

const exec = promisify(execFile)
const DEFINITIONS = path.resolve(__dirname, '../../deploy/rabbitmq/definitions.json')

/** A user's password: HMAC of its name under the stack's root secret. */
const brokerPassword = (rootSecret, user) =>
  createHmac('sha256', rootSecret).update(`clinic-broker:${user}`).digest('base64url')

/** The stack's user of `service` (naming.cjs' broker user after the stack's prefix). */
const stackBrokerUser = (service, prefix = '') => `${prefix}${namesOf(service).brokerUser}`

/** `baseUrl` (host, port, vhost) logged in as the service's user of this stack. */
function stackAmqpUrl(baseUrl, service, { prefix = '', rootSecret }) {
  const u = new URL(baseUrl)
  u.username = encodeURIComponent(stackBrokerUser(service, prefix))
  u.password = encodeURIComponent(brokerPassword(rootSecret, stackBrokerUser(service, prefix)))
  return u.toString()
}

/** RabbitMQ's rabbit_password_hashing_sha256: base64(salt ++ sha256(salt ++ password)). */
function passwordHash(password) {
  const salt = randomBytes(4)
  const hash = createHash('sha256')
    .update(Buffer.concat([salt, Buffer.from(password, 'utf8')]))
    .digest()
  return Buffer.concat([salt, hash]).toString('base64')
}

/**
 * Runs `rabbitmqctl <args>` on this machine, or inside `container` (`docker exec`) when the broker
 * runs in Docker; `input` goes to its stdin. Resolves with its stdout; rejects with its stderr.
 */
function rabbitmqctl(args, { container, input } = {}) {
  const [cmd, argv] = container
    ? ['docker', ['exec', ...(input === undefined ? [] : ['-i']), container, 'rabbitmqctl', ...args]]
    : ['rabbitmqctl', args]
  if (input === undefined) return exec(cmd, argv).then((r) => r.stdout)
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, argv, { stdio: ['pipe', 'pipe', 'pipe'] })
    let out = ''
    let err = ''
    child.stdout.on('data', (c) => (out += c))
    child.stderr.on('data', (c) => (err += c))
    child.on('error', reject)
    child.on('close', (code) =>
      code === 0 ? resolve(out) : reject(new Error(`${cmd} ${argv.join(' ')} failed (exit ${code}): ${err}`)),
    )
    child.stdin.end(input)
  })
}

/** The vhost of an AMQP URL (`/` when it names none). */
const vhostOf = (amqpUrl) => decodeURIComponent(new URL(amqpUrl).pathname.slice(1)) || '/'

/**
 * Creates (or updates) the stack's broker on the vhost of `amqpUrl`: the topology (topology.cjs:
 * exchanges, queues, bindings; `queueType` classic on one node, quorum in a cluster;
 * `retryDelayMs` how long a failed attempt waits, the services.json value by default; none with
 * `withTopology: false`, for tests that bring queues of their own), and deploy's users, each `clinic-<name>` as `<prefix>clinic-<name>` with its derived password and deploy's
 * permissions, on this vhost. One `rabbitmqctl import_definitions`, as the administrator (in
 * `container` when the broker runs there).
 */
async function createBrokerUsers({
  amqpUrl,
  prefix = '',
  rootSecret,
  definitions = DEFINITIONS,
  container,
  queueType = 'classic',
  retryDelayMs,
  withTopology = true,
}) {
  if (!rootSecret) throw new Error('createBrokerUsers: a root secret is needed for the passwords')
  const vhost = vhostOf(amqpUrl)
  const rename = (user) => (user.startsWith('clinic-') ? `${prefix}${user}` : user)
  const defs = JSON.parse(await readFile(definitions, 'utf8'))
  delete defs.$comment
  defs.vhosts = [{ name: vhost }]
  defs.users = defs.users.map((u) => {
    const name = rename(u.name)
    return { ...u, name, password_hash: passwordHash(brokerPassword(rootSecret, name)) }
  })
  for (const key of ['permissions', 'topic_permissions'])
    defs[key] = defs[key].map((p) => ({ ...p, user: rename(p.user), vhost }))
  const none = { exchanges: [], queues: [], bindings: [] }
  Object.assign(defs, withTopology ? topology({ vhost, queueType, retryDelayMs }) : none)
  await importDefinitions(defs, { container })
  return defs.users.map((u) => u.name)
}

/** `rabbitmqctl import_definitions` of `defs` (an object), here or in `container`. */
async function importDefinitions(defs, { container } = {}) {
  // The container's rabbitmqctl reads them on stdin (the host's files are not in the container).
  if (container) {
    await rabbitmqctl(['-q', 'import_definitions'], { container, input: JSON.stringify(defs) })
    return
  }
  // A file the broker's user can read (rabbitmqctl may run as it); it holds hashes, no password.
  const dir = await mkdtemp(path.join(tmpdir(), 'clinic-broker-users-'))
  try {
    await chmod(dir, 0o755)
    const file = path.join(dir, 'definitions.json')
    await writeFile(file, JSON.stringify(defs), { mode: 0o644 })
    await rabbitmqctl(['-q', 'import_definitions', file])
  } finally {
    await rm(dir, { recursive: true, force: true })
  }
}

/**
 * Before the broker's topology came from the definitions, each consumer declared its work queue
 * itself, dead-lettering through `<queue>.retry` into `<queue>.delay`; an import leaves an existing
 * queue as it is. Deletes those queues of the vhost (the work queue and its old delay queue) when
 * they are empty, so that the import makes them anew; returns the ones left because they hold
 * messages (drain them first: deploy/README.md, "Upgrading the broker's topology").
 */
async function retireLegacyQueues({ amqpUrl, container }) {
  const vhost = vhostOf(amqpUrl)
  const listed = JSON.parse(
    (await rabbitmqctl(
      ['list_queues', '-q', '--formatter', 'json', '-p', vhost, 'name', 'messages', 'arguments'],
      { container },
    )) || '[]',
  )
  const byName = new Map(listed.map((q) => [q.name, q]))
  const left = []
  for (const { queue } of workQueues()) {
    const q = byName.get(queue)
    // rabbitmqctl lists arguments as [name, AMQP type, value] triples.
    const dlx = q?.arguments.find(([name]) => name === 'x-dead-letter-exchange')?.[2]
    if (!q || dlx === `${queue}.wait`) continue
    const old = [q, byName.get(`${queue}.delay`)].filter(Boolean)
    if (old.some((o) => o.messages > 0)) {
      left.push(...old.filter((o) => o.messages > 0).map((o) => `${o.name} (${o.messages} messages)`))
      continue
    }
    for (const o of old)
      await rabbitmqctl(['-q', 'delete_queue', '-p', vhost, '--if-empty', o.name], { container })
  }
  return left
}

/** Removes the stack's users (one `rabbitmqctl eval`; a user already gone is no error). */
async function removeBrokerUsers({ prefix, container }) {
  if (!prefix) throw new Error('removeBrokerUsers: only a prefixed stack removes its users')
  const users = apps.map((s) => stackBrokerUser(s.name, prefix))
  if (users.some((u) => !/^[a-z0-9_-]+$/.test(u))) throw new Error('removeBrokerUsers: unexpected user name')
  const list = users.map((u) => `<<"${u}">>`).join(',')
  await rabbitmqctl(
    [
      '-q',
      'eval',
      `[catch rabbit_auth_backend_internal:delete_user(U, <<"clinic-tests">>) || U <- [${list}]].`,
    ],
    { container },
  )
}

/** A fresh prefix for a test stack's users: `t<hex>-`. */
const newBrokerPrefix = () => `t${randomBytes(4).toString('hex')}-`

module.exports = {
  rabbitmqctl,
  retireLegacyQueues,
  brokerPassword,
  stackBrokerUser,
  stackAmqpUrl,
  createBrokerUsers,
  removeBrokerUsers,
  newBrokerPrefix,
}
