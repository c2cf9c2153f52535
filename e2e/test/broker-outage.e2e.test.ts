import { tcpProxy, waitFor } from '@clinic/platform/testing'
import { SETTLE_MS, call, makeTenant } from '../src/client'
import { admin, startStack, stopStack, type StackInfo } from '../src/stack'

/**
 * The broker goes away (every service's connection to RabbitMQ is cut and refused) while clients
 * keep working; when it is back, every event reaches the audit trail: nothing is lost.
 * A stack of its own, whose services reach RabbitMQ through a proxy this test can cut.
 */
let info: StackInfo
let proxy: Awaited<ReturnType<typeof tcpProxy>>

beforeAll(async () => {
  info = await startStack({
    amqpVia: async (url) => {
      proxy = await tcpProxy(new URL(url))
      return proxy.url
    },
  })
})

afterAll(async () => {
  if (info) await stopStack(info)
  await proxy?.close()
})

const auditEvents = async (token: string, query: string) =>
  (await call('GET', `/audit/events?limit=100&${query}`, { token, base: info.api })).body.data ?? []

it('loses no event while RabbitMQ is unreachable', async () => {
  const t = await makeTenant(['ALM1'], info)
  const before = await call('POST', '/patients', {
    token: t.token,
    base: info.api,
    body: { first_name: 'Antes', last_name: 'Corte', birth_date: '1990-01-01' },
  })
  expect(before.status).toBe(201)
  await waitFor(
    async () =>
      (await auditEvents(t.token, `resource_id=${before.body.id}&action=patient.created`)).length === 1,
    {
      timeoutMs: SETTLE_MS,
      intervalMs: 200,
      what: 'the first event before the outage',
    },
  )

  proxy.cut()
  await waitFor(async () => (await fetch(`${info.api}/health`)).status === 503, {
    timeoutMs: SETTLE_MS,
    what: 'health to notice the broker is gone',
  })

  // Clients are served as usual: the changes and their events commit together in the outboxes.
  const ids: string[] = []
  for (let i = 0; i < 5; i++) {
    const created = await call('POST', '/patients', {
      token: t.token,
      base: info.api,
      body: { first_name: `Durante${i}`, last_name: 'Corte', birth_date: '1990-01-01' },
    })
    expect(created.status).toBe(201)
    ids.push(created.body.id)
    const patched = await call('PATCH', `/patients/${created.body.id}`, {
      token: t.token,
      base: info.api,
      body: { email: `d${i}@example.test` },
    })
    expect(patched.status).toBe(200)
  }
  expect(proxy.refused).toBeGreaterThan(0) // the services kept trying to reconnect

  proxy.restore()
  await waitFor(
    async () => {
      const events = await auditEvents(t.token, 'resource_type=patient')
      return ids.every(
        (id) =>
          events.some((e: any) => e.resource_id === id && e.action === 'patient.created') &&
          events.some((e: any) => e.resource_id === id && e.action === 'patient.updated') &&
          events.some(
            (e: any) => e.resource_id === id && e.action === 'http.request' && e.http.method === 'PATCH',
          ),
      )
    },
    { timeoutMs: SETTLE_MS, intervalMs: 250, what: 'every event of the outage in the audit trail' },
  )
  // Each exactly once, and the company's chain intact.
  const events = await auditEvents(t.token, 'resource_type=patient&action=patient.created')
  expect(events.filter((e: any) => ids.includes(e.resource_id))).toHaveLength(ids.length)
  expect(await admin(info, 'audit:verify', '--company', String(t.companyId))).toMatch(/^ok: /)
})
