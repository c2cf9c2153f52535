import { randomUUID } from 'node:crypto'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import amqplib, { type Channel, type ChannelModel, type Options } from 'amqplib'
import { DEAD_LETTER_EXCHANGE, EXCHANGE, PARKED_HEADER, makeEvent, type CloudEvent } from '@clinic/platform'
import { stackBrokerUser } from '@clinic/platform/broker-users'
import { apps } from '@clinic/platform/naming'
import { waitFor } from '@clinic/platform/testing'
import { serviceEnv } from '../../scripts/service-env.cjs'
import { SETTLE_MS, SLOW_TEST_MS, call, makeTenant, stack, type Tenant } from '../src/client'
import { admin } from '../src/stack'

/**
 * The broker's permission matrix, every path an insider holding one service's broker credentials has
 * (DESIGN.md section 17; docs/security.md, issue 40). As each service's user of the running stack:
 * a forged event (another source's, for a victim company) published to every exchange of the vhost
 * under every routing key a consumer binds, the user's own types, `back`, `delay`, empty and every
 * queue's name, with and without the origin headers an older release believed and with no, its own
 * or the claimed source's `user_id`; every exchange deleted, declared and re-declared as another
 * type; every queue bound to every exchange, consumed and purged. The broker refuses each, but a
 * publish of the user's own types to clinic.events and a consumer's parking in the dead-letter
 * exchange; what it lets through reaches the consumers bound to it, which park it in their
 * dead-letter queue as not their source's; and nothing reaches the victim's audit trail, change feed
 * or webhooks, whose chain stays intact. A control event from its real source goes all the way.
 */
jest.setTimeout(SLOW_TEST_MS * 2)

interface Attempt {
  user: string
  what: string
  outcome: string
}

const services = apps.map((s) => ({
  name: s.name,
  publishes: s.publishes ?? [],
  queues: (s.consumes ?? []).map((c) => c.queue),
}))
const workQueues = apps.flatMap((s) => s.consumes ?? [])
const queueNames = workQueues.flatMap((w) => [w.queue, `${w.queue}.wait`, `${w.queue}.dlq`])
/** Every exchange a client could name: the vhost's, the built-in ones, and an older release's retry exchanges. */
const exchanges = [
  EXCHANGE,
  DEAD_LETTER_EXCHANGE,
  '',
  'amq.direct',
  'amq.topic',
  'amq.fanout',
  'amq.headers',
  'amq.match',
  ...workQueues.flatMap((w) => [`${w.queue}.wait`, `${w.queue}.back`, `${w.queue}.retry`]),
]
const bindingKeys = [...new Set(workQueues.flatMap((w) => w.bindings))]

/** Topic matching as RabbitMQ does it (`*` one word, `#` any number). */
function topicMatches(pattern: string, key: string): boolean {
  const p = pattern.split('.')
  const k = key.split('.')
  const at = (i: number, j: number): boolean => {
    if (i === p.length) return j === k.length
    if (p[i] === '#') return at(i + 1, j) || (j < k.length && at(i, j + 1))
    return j < k.length && (p[i] === '*' || p[i] === k[j]) && at(i + 1, j + 1)
  }
  return at(0, 0)
}

let victim: Tenant
let inspector: ChannelModel
let hooks: { server: Server; received: string[]; url: string }
let endpointId: string
const urlOf = (service: string) => serviceEnv(service, stack().env).AMQP_URL!
const userOf = (service: string) => stackBrokerUser(service, stack().env.BROKER_USER_PREFIX)

beforeAll(async () => {
  victim = await makeTenant(['ALM1'])
  inspector = await amqplib.connect(stack().cleanup.amqpUrl!)
  const received: string[] = []
  const server = createServer((req, res) => {
    received.push(`${req.method} ${req.url}`)
    res.writeHead(204).end()
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  hooks = { server, received, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/victim` }
  const ep = await call('POST', '/webhooks/endpoints', {
    token: victim.token,
    body: { url: hooks.url, event_types: ['*'] },
  })
  expect(ep.status).toBe(201)
  endpointId = ep.body.id
}, SLOW_TEST_MS)
afterAll(async () => {
  await inspector?.close().catch(() => undefined)
  hooks?.server.closeAllConnections()
  await new Promise((resolve) => hooks?.server.close(resolve))
})

/** What the broker answers `fn` on a channel of its own: 'ok' (confirmed), or why it refused. */
async function attempt(conn: ChannelModel, fn: (ch: Channel) => Promise<unknown>): Promise<string> {
  let ch: Channel
  try {
    ch = await conn.createChannel()
  } catch (err) {
    return `no channel: ${(err as Error).message}`
  }
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

/** A publish on a confirm channel of its own: 'ok' once confirmed, or the broker's refusal. */
async function publish(conn: ChannelModel, exchange: string, key: string, body: Buffer, o: Options.Publish) {
  let ch: Awaited<ReturnType<ChannelModel['createConfirmChannel']>>
  try {
    ch = await conn.createConfirmChannel()
  } catch (err) {
    return `no channel: ${(err as Error).message}`
  }
  return new Promise<string>((resolve) => {
    let refusal = 'channel closed'
    ch.on('error', (err: Error) => (refusal = err.message))
    ch.once('close', () => resolve(refusal))
    ch.publish(exchange, key, body, { persistent: true, ...o }, (err) => {
      if (err) return resolve(refusal)
      resolve('ok')
      void ch.close().catch(() => undefined)
    })
  })
}

/** Runs the attempts a few at a time (each a channel of its own). */
async function inTurns<T>(items: T[], run: (item: T) => Promise<void>, width = 48) {
  for (let i = 0; i < items.length; i += width) await Promise.all(items.slice(i, i + width).map(run))
}

/** A forged event for the victim: `type` from its real source (never `publisher` itself). */
function forged(publisher: string, key: string): CloudEvent {
  const owner = services.find((s) => s.publishes.includes(key))
  const [type, source] =
    owner && owner.name !== publisher
      ? [key, owner.name]
      : publisher === 'patients'
        ? ['appointment.created', 'appointments']
        : ['patient.updated', 'patients']
  const subject = randomUUID()
  return makeEvent({
    type,
    source: `clinic/${source}`,
    subject,
    companyId: victim.companyId,
    codalmacen: 'ALM1',
    data: { id: subject, codalmacen: 'ALM1', version: 2, changes: ['email'] },
  } as unknown as Parameters<typeof makeEvent>[0]) as CloudEvent
}

/** The message ids in `queue` (read and handed back: left in place). */
async function idsIn(queue: string): Promise<Map<string, string>> {
  const ch = await inspector.createChannel()
  try {
    const ids = new Map<string, string>()
    for (;;) {
      const msg = await ch.get(queue)
      if (!msg) break
      ids.set(String(msg.properties.messageId), String(msg.properties.headers?.[PARKED_HEADER] ?? ''))
    }
    await ch.recover()
    return ids
  } finally {
    await ch.close().catch(() => undefined)
  }
}

describe('the broker permission matrix (every service user, every path)', () => {
  const accepted: Array<{ user: string; exchange: string; key: string; id: string }> = []
  const unexpected: Attempt[] = []

  it('publishes: only its own types to clinic.events and, for a consumer, parking; forged user_id never', async () => {
    let tried = 0
    for (const s of services) {
      const conn = await amqplib.connect(urlOf(s.name))
      conn.on('error', () => undefined)
      try {
        // Every exchange under every key a consumer binds, `back`, `delay` and empty; besides, its own
        // types where it may publish and each queue's name where a key names a queue.
        const keys = [...bindingKeys, 'back', 'delay', '']
        const routes = [
          ...exchanges.flatMap((exchange) => keys.map((key) => ({ exchange, key }))),
          ...s.publishes.flatMap((key) =>
            [EXCHANGE, DEAD_LETTER_EXCHANGE].map((exchange) => ({ exchange, key })),
          ),
          ...queueNames.flatMap((key) => ['', DEAD_LETTER_EXCHANGE].map((exchange) => ({ exchange, key }))),
        ]
        const cases = routes.flatMap((route) =>
          [undefined, userOf(s.name), 'claimed'].flatMap((userId) =>
            [false, true].map((headers) => ({ ...route, userId, headers })),
          ),
        )
        await inTurns(cases, async ({ exchange, key, userId, headers }) => {
          const event = forged(s.name, key)
          const claimed = userOf(event.source.replace(/^clinic\//, ''))
          const options: Options.Publish = {
            messageId: event.id,
            type: event.type,
            contentType: 'application/cloudevents+json',
            ...(userId ? { userId: userId === 'claimed' ? claimed : userId } : {}),
            // What an older release believed on a message back from a retry.
            ...(headers
              ? { headers: { 'x-clinic-origin-user': claimed, 'x-clinic-origin-routing-key': event.type } }
              : {}),
          }
          const outcome = await publish(conn, exchange, key, Buffer.from(JSON.stringify(event)), options)
          tried++
          const allowed =
            userId !== 'claimed' &&
            ((exchange === EXCHANGE && s.publishes.includes(key)) ||
              (exchange === DEAD_LETTER_EXCHANGE && s.queues.length > 0))
          if (outcome === 'ok') accepted.push({ user: s.name, exchange, key, id: event.id })
          if ((outcome === 'ok') !== allowed)
            unexpected.push({
              user: s.name,
              what: `publish to ${exchange || 'amq.default'} under ${key || '(empty)'}, user_id ${userId ?? 'none'}${headers ? ', origin headers' : ''}`,
              outcome,
            })
        })
      } finally {
        await conn.close().catch(() => undefined)
      }
    }
    expect(unexpected).toEqual([])
    // Every user tried every exchange and key, every way.
    expect(tried).toBeGreaterThan(services.length * exchanges.length * (bindingKeys.length + 3) * 6)
    expect(accepted.some((a) => a.exchange === EXCHANGE)).toBe(true)
  })

  it('configures, binds, reads and purges nothing but its own work queue (read)', async () => {
    const refusedOps: Attempt[] = []
    for (const s of services) {
      const conn = await amqplib.connect(urlOf(s.name))
      conn.on('error', () => undefined)
      try {
        const named = exchanges.filter((x) => x !== '' && !x.endsWith('.retry'))
        const ops: Array<[string, (ch: Channel) => Promise<unknown>]> = [
          ...named.flatMap((x): Array<[string, (ch: Channel) => Promise<unknown>]> => [
            [`delete exchange ${x}`, (ch) => ch.deleteExchange(x)],
            [`declare exchange ${x}`, (ch) => ch.assertExchange(x, x === EXCHANGE ? 'topic' : 'fanout')],
            [`re-declare ${x} as another type`, (ch) => ch.assertExchange(x, 'headers')],
            ...queueNames.map((q): [string, (ch: Channel) => Promise<unknown>] => [
              `bind ${q} to ${x}`,
              (ch) => ch.bindQueue(q, x, '#'),
            ]),
          ]),
          ['declare a queue of its own', (ch) => ch.assertQueue(`${s.name}.mine`)],
          ...queueNames.flatMap((q): Array<[string, (ch: Channel) => Promise<unknown>]> => [
            [`delete queue ${q}`, (ch) => ch.deleteQueue(q)],
            [
              `purge ${q}`,
              (ch) => (s.queues.includes(q) ? Promise.reject(new Error('skip')) : ch.purgeQueue(q)),
            ],
            [
              `consume ${q}`,
              (ch) =>
                s.queues.includes(q) ? Promise.reject(new Error('skip')) : ch.consume(q, () => undefined),
            ],
          ]),
        ]
        await inTurns(ops, async ([what, op]) => {
          const outcome = await attempt(conn, op)
          if (outcome === 'channel closed') return // the 'skip' above: its own queue's read
          if (!/ACCESS_REFUSED|NOT_ALLOWED/.test(outcome)) refusedOps.push({ user: s.name, what, outcome })
        })
        // Passive checks (what services do at start) need no permission.
        for (const x of [EXCHANGE, DEAD_LETTER_EXCHANGE])
          expect(await attempt(conn, (ch) => ch.checkExchange(x))).toBe('ok')
      } finally {
        await conn.close().catch(() => undefined)
      }
    }
    expect(refusedOps).toEqual([])
  })

  it('what the broker let through is parked by every consumer bound to it; nothing reaches the victim', async () => {
    const forgeries = accepted.filter((a) => a.exchange === EXCHANGE)
    for (const w of workQueues) {
      const due = forgeries.filter((f) => w.bindings.some((b) => topicMatches(b, f.key))).map((f) => f.id)
      const parked = await waitFor(
        async () => {
          const ids = await idsIn(`${w.queue}.dlq`)
          return due.every((id) => ids.has(id)) ? ids : null
        },
        {
          timeoutMs: SETTLE_MS,
          intervalMs: 500,
          what: `the ${due.length} forgeries parked in ${w.queue}.dlq`,
        },
      )
      // Refused as another's, never tried and failed.
      expect(new Set(due.map((id) => parked.get(id)))).toEqual(
        due.length ? new Set(['wrong_user']) : new Set(),
      )
    }

    // A control from its real source, published after every forgery: it goes all the way.
    const controlId = randomUUID()
    const control = makeEvent({
      type: 'patient.updated',
      source: 'clinic/patients',
      subject: controlId,
      companyId: victim.companyId,
      codalmacen: 'ALM1',
      data: { id: controlId, codalmacen: 'ALM1', version: 2, changes: ['email'] },
    } as unknown as Parameters<typeof makeEvent>[0])
    const conn = await amqplib.connect(urlOf('patients'))
    try {
      expect(
        await publish(conn, EXCHANGE, control.type, Buffer.from(JSON.stringify(control)), {
          messageId: control.id,
          userId: userOf('patients'),
        }),
      ).toBe('ok')
    } finally {
      await conn.close()
    }
    const trail = await waitFor(
      async () => {
        const res = await call('GET', '/audit/events?limit=100', { token: victim.token })
        const rows = (res.body.data ?? []) as Array<{ action: string; resource_id: string }>
        return rows.some((r) => r.resource_id === controlId) ? rows : null
      },
      { timeoutMs: SETTLE_MS, intervalMs: 500, what: 'the control in the trail' },
    )
    const feed = await waitFor(
      async () => {
        const rows = (await call('GET', '/events?limit=100', { token: victim.token })).body.data as Array<{
          id: string
          type: string
        }>
        return rows?.some((r) => r.id === control.id) ? rows : null
      },
      { timeoutMs: SETTLE_MS, intervalMs: 500, what: 'the control in the feed' },
    )
    await waitFor(async () => hooks.received.length > 0, {
      timeoutMs: SETTLE_MS,
      intervalMs: 500,
      what: 'the control at the webhook receiver',
    })
    const deliveries = (
      await call('GET', `/webhooks/endpoints/${endpointId}/deliveries?limit=100`, { token: victim.token })
    ).body.data as Array<{ event_id: string }>

    // Of the victim's trail, feed and webhooks: the control alone, beside what the company did itself
    // (its token made, its endpoint registered, its requests).
    const own = new Set(['token.created', 'webhooks.endpoint.created'])
    expect(trail.filter((r) => !r.action.startsWith('http.') && !own.has(r.action))).toEqual([
      expect.objectContaining({ action: 'patient.updated', resource_id: controlId }),
    ])
    expect(feed.filter((r) => !r.type.startsWith('webhooks.')).map((r) => r.id)).toEqual([control.id])
    expect(deliveries.map((d) => d.event_id)).toEqual([control.id])
    expect(hooks.received).toEqual(['POST /victim'])
    expect(await admin(stack(), 'audit:verify', '--company', String(victim.companyId))).toMatch(/^ok: /)
  })
})
