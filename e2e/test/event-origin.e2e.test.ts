import { randomUUID } from 'node:crypto'
import amqplib, { type ChannelModel, type Options } from 'amqplib'
import { EXCHANGE, accessBatch, makeEvent, type CloudEvent } from '@clinic/platform'
import { stackBrokerUser } from '@clinic/platform/broker-users'
import { waitFor } from '@clinic/platform/testing'
import { serviceEnv } from '../../scripts/service-env.cjs'
import { SETTLE_MS, call, makeTenant, stack, type Tenant } from '../src/client'
import { admin } from '../src/stack'

/**
 * An insider holding comms' broker credentials (its AMQP_URL, as the stack gives it to comms) tries
 * to write another company's audit trail through the broker, as a review reproduced it when every
 * consumer took an event's `source` on the word of a shared HMAC key. Each forgery is refused by the
 * broker (permissions, the validated user_id) or dead-lettered by the consumer (the event's source
 * has another broker user, or does not publish its type); none reaches GET /audit/events, and
 * audit:verify still says the chain is intact.
 */
let victim: Tenant
let conn: ChannelModel
/** The stack's vhost as the test harness (guest), to read the dead-letter queues. */
let inspector: ChannelModel
const commsUrl = () => serviceEnv('comms', stack().env).AMQP_URL!
const brokerUserOf = (service: string) => stackBrokerUser(service, stack().env.BROKER_USER_PREFIX)

beforeAll(async () => {
  victim = await makeTenant(['ALM1'])
  conn = await amqplib.connect(commsUrl())
  inspector = await amqplib.connect(stack().cleanup.amqpUrl!)
})
afterAll(async () => {
  await conn?.close().catch(() => undefined)
  await inspector?.close().catch(() => undefined)
})

/** Publishes on a confirm channel of its own: 'confirmed', or the broker's reason for refusing it. */
async function publish(
  exchange: string,
  routingKey: string,
  event: CloudEvent,
  options: Options.Publish = {},
): Promise<string> {
  const ch = await conn.createConfirmChannel()
  return new Promise((resolve) => {
    let refusal = 'channel closed'
    ch.on('error', (err: Error) => (refusal = err.message))
    ch.once('close', () => resolve(refusal))
    ch.publish(
      exchange,
      routingKey,
      Buffer.from(JSON.stringify(event)),
      { persistent: true, messageId: event.id, type: event.type, ...options },
      (err) => {
        if (err) return resolve(refusal)
        resolve('confirmed')
        void ch.close().catch(() => undefined)
      },
    )
  })
}

/** The ids of the messages in audit's dead-letter queue (read and handed back: left in place). */
async function deadLettered(): Promise<string[]> {
  const ch = await inspector.createChannel()
  try {
    const ids: string[] = []
    for (;;) {
      const msg = await ch.get('audit.events.dlq')
      if (!msg) break
      ids.push(String(msg.properties.messageId))
    }
    await ch.recover() // everything got above goes back to the queue
    return ids
  } finally {
    await ch.close().catch(() => undefined)
  }
}

/**
 * Publishes an event the broker lets through (a routing key comms may use) and waits until audit's
 * consumer has dead-lettered it.
 */
async function acceptedThenDeadLettered(
  routingKey: string,
  event: CloudEvent,
  options: Options.Publish,
  what: string,
) {
  expect(await publish(EXCHANGE, routingKey, event, options)).toBe('confirmed')
  await waitFor(async () => (await deadLettered()).includes(event.id), {
    timeoutMs: SETTLE_MS,
    intervalMs: 200,
    what: `${what} in audit.events.dlq`,
  })
}

const patientUpdated = (subject: string) =>
  makeEvent({
    type: 'patient.updated',
    source: 'clinic/patients',
    subject,
    companyId: victim.companyId,
    codalmacen: 'ALM1',
    data: { id: subject, codalmacen: 'ALM1', version: 2, changes: ['email'] },
  } as Parameters<typeof makeEvent>[0])

/** What the victim company's trail says about `resourceIds`, and that its chain is intact. */
async function trailUntouched(resourceIds: string[]) {
  const res = await call('GET', '/audit/events?limit=100', { token: victim.token })
  expect(res.status).toBe(200)
  const rows = (res.body.data ?? []) as Array<{
    resource_id: string | null
    action: string
    http?: { path?: string }
  }>
  // The company's own reads of its trail are there; nothing the forgeries claimed.
  const forged = rows.filter(
    (e) =>
      e.action === 'patient.updated' ||
      resourceIds.includes(String(e.resource_id)) ||
      resourceIds.some((id) => e.http?.path?.includes(id)),
  )
  expect(forged).toEqual([])
  expect(await admin(stack(), 'audit:verify', '--company', String(victim.companyId))).toMatch(/^ok: /)
}

describe('event origin is the broker word (comms credentials, another company)', () => {
  it('a gateway-looking http.batch under comms.message.sent is dead-lettered, never recorded', async () => {
    const resource = randomUUID()
    const access = makeEvent({
      type: 'http.request',
      source: 'clinic/gateway',
      subject: resource,
      companyId: victim.companyId,
      data: {
        method: 'GET',
        path: `/api/patients/${resource}`,
        status: 200,
        resource_type: 'patient',
        resource_id: resource,
      },
    } as Parameters<typeof makeEvent>[0])
    const batch = accessBatch([access])
    // comms may publish comms.message.sent, and as itself: the broker lets it through.
    await acceptedThenDeadLettered(
      'comms.message.sent',
      batch,
      { userId: brokerUserOf('comms') },
      'the forged batch',
    )
    await trailUntouched([resource])
  })

  it('a patients-looking patient.updated sent straight to audit.events (amq.default) is refused by the broker', async () => {
    const resource = randomUUID()
    const forged = patientUpdated(resource)
    expect(await publish('', 'audit.events', forged, { userId: brokerUserOf('comms') })).toMatch(
      /ACCESS_REFUSED/,
    )
    // Nor through audit's own retry exchange.
    expect(await publish('audit.events.retry', 'patient.updated', forged)).toMatch(/ACCESS_REFUSED/)
    await trailUntouched([resource])
  })

  it("an event with a forged user_id (patients' user) is refused by the broker", async () => {
    const resource = randomUUID()
    const forged = patientUpdated(resource)
    const refusal = await publish(EXCHANGE, 'comms.message.sent', forged, {
      userId: brokerUserOf('patients'),
    })
    expect(refusal).toMatch(/PRECONDITION_FAILED/)
    expect(refusal).toContain('user_id')
    // Without a user_id (or with its own), under a key comms may use: the consumer knows it is not
    // patients' and dead-letters it.
    const unsigned = patientUpdated(resource)
    await acceptedThenDeadLettered(
      'comms.message.sent',
      unsigned,
      {},
      'the patients-looking event without user_id',
    )
    await trailUntouched([resource])
  })

  it('a type comms does not publish: refused under its own routing key, dead-lettered under one of comms', async () => {
    const resource = randomUUID()
    const forged = patientUpdated(resource)
    expect(await publish(EXCHANGE, 'patient.updated', forged, { userId: brokerUserOf('comms') })).toMatch(
      /ACCESS_REFUSED/,
    )
    // Claimed by comms itself, as comms: but comms emits no patient.updated.
    const asComms = { ...patientUpdated(randomUUID()), source: 'clinic/comms', subject: resource }
    await acceptedThenDeadLettered(
      'comms.message.sent',
      asComms,
      { userId: brokerUserOf('comms') },
      'the comms-sourced patient.updated',
    )
    await trailUntouched([resource])
  })

  it("comms' own event, published as comms, still reaches the trail (the rule refuses only forgeries)", async () => {
    const resource = randomUUID()
    const own = makeEvent({
      type: 'comms.preference.updated',
      source: 'clinic/comms',
      subject: resource,
      companyId: victim.companyId,
      data: {
        preference_id: resource,
        channel: 'email',
        opted_out: true,
        source: 'api',
        changes: ['opted_out'],
      },
    } as unknown as Parameters<typeof makeEvent>[0])
    expect(await publish(EXCHANGE, own.type, own, { userId: brokerUserOf('comms') })).toBe('confirmed')
    await waitFor(
      async () => {
        const res = await call('GET', `/audit/events?limit=100&action=comms.preference.updated`, {
          token: victim.token,
        })
        return (res.body.data ?? []).length > 0
      },
      { timeoutMs: SETTLE_MS, intervalMs: 200, what: "comms' own event in the trail" },
    )
  })
})
