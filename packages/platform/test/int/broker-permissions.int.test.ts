import { execFile } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'
import amqplib, { type Channel, type ChannelModel, type ConfirmChannel } from 'amqplib'
import { Amqp, DEAD_LETTER_EXCHANGE, EXCHANGE, PARKED_HEADER } from '@clinic/platform'
import { apps, namesOf } from '@clinic/platform/naming'
import { uniqueName } from '@clinic/platform/testing'
import { amqpUrl, testLog } from './helpers'

// Per-service broker users (deploy/rabbitmq/definitions.json, deploy/README.md): topic permissions
// on clinic.events let each service publish only its own routing keys; the topology comes from the
// definitions and services only check it. Proven here against the machine's RabbitMQ, in a vhost and
// with users of this run only (rabbitmqctl, removed after). Every path an insider has, through the
// running stack's consumers: e2e/test/broker-permissions.e2e.test.ts.

jest.setTimeout(60_000)

const exec = promisify(execFile)
const rabbitmqctl = (...args: string[]) => exec('rabbitmqctl', args)
/**
 * deploy/rabbitmq/users.sh, as Compose runs it, on `json` with `env` (the <NAME>_AMQP_PASSWORD
 * variables). Through a file the broker's user can read (rabbitmqctl runs as that user; the
 * definitions hold no secret).
 */
async function runUsersScript(json: string, env: Record<string, string>) {
  const dir = await mkdtemp(path.join(tmpdir(), 'clinic-defs-'))
  try {
    await chmod(dir, 0o755)
    const file = path.join(dir, 'definitions.json')
    await writeFile(file, json, { mode: 0o644 })
    return await exec('sh', [USERS_SCRIPT], { env: { ...process.env, DEFINITIONS: file, ...env } })
  } finally {
    await rm(dir, { recursive: true, force: true })
  }
}
const passwordVar = (user: string) => namesOf(user.replace(/^clinic-/, '')).env.amqpPassword
const brokerUsers = async () =>
  (await rabbitmqctl('list_users', '--quiet', '--no-table-headers')).stdout
    .split('\n')
    .map((l) => l.split('\t')[0])

const DEFINITIONS = path.resolve(__dirname, '../../../../deploy/rabbitmq/definitions.json')
const USERS_SCRIPT = path.resolve(__dirname, '../../../../deploy/rabbitmq/users.sh')

const vhost = uniqueName('clinic_test_perm')
const prefix = `t${randomBytes(4).toString('hex')}`
// Always beginning with '-', as one base64url password in 64 does: rabbitmqctl must not take it
// for an option (users.sh passes `--`; a run once failed on such a password).
const password = `-${randomBytes(18).toString('base64url')}`
const users: string[] = []
const log = testLog('broker-permissions')

/** amqp://<user>:<password>@<the run's broker>/<this test's vhost> */
function urlFor(user: string): string {
  const u = new URL(amqpUrl())
  u.username = user
  u.password = password
  u.pathname = `/${encodeURIComponent(vhost)}`
  return u.toString()
}

/** Publishes on a confirm channel; resolves 'confirmed', or the reason the broker refused it. */
async function publish(ch: ConfirmChannel, routingKey: string): Promise<string> {
  return new Promise((resolve) => {
    let refusal = 'channel closed'
    ch.once('error', (err: Error) => (refusal = err.message))
    ch.once('close', () => resolve(refusal))
    ch.publish(EXCHANGE, routingKey, Buffer.from('{}'), { persistent: true }, (err) =>
      err ? resolve(refusal) : resolve('confirmed'),
    )
  })
}

/** Rejects if `p` takes longer than `ms` (a connection the broker refuses is retried forever). */
const within = <T>(p: Promise<T>, ms: number, what: string) =>
  Promise.race([
    p,
    new Promise<never>((_, r) => setTimeout(() => r(new Error(`${what}: timed out`)), ms).unref()),
  ])

beforeAll(async () => {
  await rabbitmqctl('add_vhost', vhost)
})
afterAll(async () => {
  for (const user of users) await rabbitmqctl('delete_user', user).catch(() => undefined)
  await rabbitmqctl('delete_vhost', vhost)
}, 240_000) // one rabbitmqctl per user

describe('topic permissions on clinic.events', () => {
  it("refuse a routing key outside the user's pattern on a confirm channel, and accept its own", async () => {
    // As deploy/README.md documents it, with this run's names.
    const user = `${prefix}-patients-cli`
    users.push(user)
    // `--`: the password may begin with '-' (base64url), which rabbitmqctl reads as an option.
    await rabbitmqctl('add_user', user, '--', password)
    await rabbitmqctl('set_permissions', '-p', vhost, user, '^clinic\\.events$', '^clinic\\.events$', '^$')
    await rabbitmqctl('set_topic_permissions', '-p', vhost, user, EXCHANGE, '^patient\\.', '^$')
    const conn = await amqplib.connect(urlFor(user))
    try {
      const setup = await conn.createChannel()
      await setup.assertExchange(EXCHANGE, 'topic', { durable: true })
      await setup.close()
      const refused = await publish(await conn.createConfirmChannel(), 'appointment.created')
      expect(refused).toMatch(/ACCESS_REFUSED/)
      expect(refused).toContain('appointment.created')
      await expect(publish(await conn.createConfirmChannel(), 'patient.created')).resolves.toBe('confirmed')
    } finally {
      await conn.close()
    }
  })
})

describe('deploy/rabbitmq/definitions.json', () => {
  type Definitions = {
    users: Array<{ name: string }>
    topic_permissions: Array<{ user: string; write: string }>
  }
  const service = (user: string) => `clinic-${prefix}-${user.replace(/^clinic-/, '')}`
  let defs: Definitions

  beforeAll(async () => {
    // The file as it is, with this run's vhost and user names, imported by the broker itself.
    const text = await readFile(DEFINITIONS, 'utf8')
    defs = JSON.parse(text) as Definitions
    const renamed = JSON.parse(text, (key, value: unknown) =>
      key === 'vhost' || (key === 'name' && value === 'clinic')
        ? vhost
        : (key === 'user' || key === 'name') && typeof value === 'string' && value.startsWith('clinic-')
          ? service(value)
          : value,
    ) as Definitions
    users.push(...renamed.users.map((u) => u.name))
    // What Compose's broker-users step runs: the import, then each password from the environment.
    const names = renamed.users.map((u) => u.name)
    const { stdout } = await runUsersScript(
      JSON.stringify(renamed, null, 2),
      Object.fromEntries(names.map((u) => [passwordVar(u), password])),
    )
    expect(stdout.trim().split('\n').sort()).toEqual(names.map((u) => `${u}: password set`).sort())
    // About ten rabbitmqctl runs, each an Erlang VM: under a second here when quiet, several when
    // the machine is busy (a CI run once passed 60 s).
  }, 240_000)

  it('users.sh changes nothing on the broker while a password is missing', async () => {
    const other = `clinic-${prefix}x-patients`
    // This run's vhost too, so that even a broken script could not touch the broker's `clinic`.
    const json = (await readFile(DEFINITIONS, 'utf8'))
      .replace(/"clinic-[a-z0-9-]+"/g, `"${other}"`)
      .replace(/"(vhost|name)": "clinic"/g, `"$1": "${vhost}"`)
    await expect(runUsersScript(json, {})).rejects.toMatchObject({
      stderr: expect.stringContaining(`${passwordVar(other)} is not set`),
    })
    expect(await brokerUsers()).not.toContain(other)
  })

  it('names one user per service, audit publishing nothing', () => {
    expect(defs.users.map((u) => u.name).sort()).toEqual(apps.map((s) => namesOf(s).brokerUser).sort())
    expect(defs.topic_permissions.find((t) => t.user === 'clinic-audit')?.write).toBe('^$')
  })

  // Each service's own event types (services.json `publishes`); refused: a type of every other service
  // and one of its own kind that it does not publish.
  const cases = apps.map((s): [string, string[], string[]] => {
    const own = s.publishes ?? []
    const others = apps.filter((o) => o !== s).flatMap((o) => (o.publishes ?? []).slice(0, 1))
    const unknown = own[0] ? `${own[0].slice(0, own[0].lastIndexOf('.'))}.other` : `${s.name}.anything`
    return [namesOf(s).brokerUser, own, [...others, unknown]]
  })
  it.each(cases)('%s starts as the service does and publishes only %j', async (user, own, others) => {
    const amqp = new Amqp({ url: urlFor(service(user)), log, name: 'broker-permissions' })
    try {
      // Connecting declares the exchanges: configure permission on both.
      await within(amqp.start(), 15_000, `${user} connecting`)
      for (const type of own)
        await expect(
          amqp.publishRaw([{ id: randomBytes(8).toString('hex'), type, body: Buffer.from('{}') }]),
        ).resolves.toBeUndefined()
      const conn = await amqplib.connect(urlFor(service(user)))
      try {
        for (const type of others)
          expect(await publish(await conn.createConfirmChannel(), type)).toMatch(/ACCESS_REFUSED/)
      } finally {
        await conn.close()
      }
    } finally {
      await amqp.close()
    }
  })

  /** What the broker answers `fn` on a channel of its own: 'ok', or why it refused. */
  async function attempt(conn: ChannelModel, fn: (ch: Channel) => Promise<unknown>): Promise<string> {
    const ch = await conn.createChannel()
    let refusal = 'channel closed'
    ch.on('error', (err: Error) => (refusal = err.message))
    try {
      await fn(ch)
      await ch.close()
      return 'ok'
    } catch {
      return refusal
    }
  }

  // Each consumer's work queue (services.json `consumes`).
  const queues = apps.flatMap((s) =>
    (s.consumes ?? []).map((c): [string, string] => [namesOf(s).brokerUser, c.queue]),
  )
  const allQueues = queues.flatMap(([, q]) => [q, `${q}.wait`, `${q}.dlq`])
  it.each(queues)(
    '%s consumes %s and parks in its dead-letter queue; configures, binds and reads nothing else',
    async (user, queue) => {
      const amqp = new Amqp({ url: urlFor(service(user)), log, name: 'broker-permissions' })
      const conn = await amqplib.connect(urlFor(service(user)))
      try {
        await within(amqp.start(), 15_000, `${user} connecting`)
        expect(await attempt(conn, (ch) => ch.consume(queue, () => undefined, { noAck: false }))).toBe('ok')
        // Parking: through the dead-letter exchange into its .dlq, as itself.
        await expect(
          amqp.publishTo(DEAD_LETTER_EXCHANGE, queue, Buffer.from('{}'), {
            headers: { [PARKED_HEADER]: 'test' },
          }),
        ).resolves.toBeUndefined()
        const refused = {
          'its own wait queue': await attempt(conn, (ch) => ch.consume(`${queue}.wait`, () => undefined)),
          'its own dead letters': await attempt(conn, (ch) => ch.consume(`${queue}.dlq`, () => undefined)),
          'the way back (internal)': await attempt(conn, async (ch) => {
            ch.publish(`${queue}.back`, '', Buffer.from('{}'))
            await ch.checkExchange(EXCHANGE) // a round trip: the refusal arrives first
          }),
          'the wait exchange (internal)': await attempt(conn, async (ch) => {
            ch.publish(`${queue}.wait`, '', Buffer.from('{}'))
            await ch.checkExchange(EXCHANGE)
          }),
          'amq.default': await attempt(conn, async (ch) => {
            ch.publish('', queue, Buffer.from('{}'))
            await ch.checkExchange(EXCHANGE)
          }),
          'a binding to the dead-letter exchange': await attempt(conn, (ch) =>
            ch.bindQueue(queue, DEAD_LETTER_EXCHANGE, 'audit.events'),
          ),
          'a binding of its own queue': await attempt(conn, (ch) => ch.bindQueue(queue, EXCHANGE, '#')),
          'deleting clinic.events': await attempt(conn, (ch) => ch.deleteExchange(EXCHANGE)),
          're-declaring clinic.events as fanout': await attempt(conn, (ch) =>
            ch.assertExchange(EXCHANGE, 'fanout', { durable: true }),
          ),
          'declaring a queue of its own': await attempt(conn, (ch) => ch.assertQueue(`${queue}.mine`)),
          'deleting its own queue': await attempt(conn, (ch) => ch.deleteQueue(queue)),
        }
        for (const [what, answer] of Object.entries(refused))
          expect([what, answer]).toEqual([what, expect.stringMatching(/ACCESS_REFUSED|NOT_ALLOWED/)])
        // Every other queue, its own wait and dead-letter queues included; its other work queues
        // (comms has two) are its own to read.
        const itsWork = queues.filter(([u]) => u === user).map(([, q]) => q)
        for (const other of allQueues.filter((q) => !itsWork.includes(q)))
          expect([other, await attempt(conn, (ch) => ch.consume(other, () => undefined))]).toEqual([
            other,
            expect.stringMatching(/ACCESS_REFUSED/),
          ])
      } finally {
        await conn.close().catch(() => undefined)
        await amqp.close()
      }
    },
  )
})
