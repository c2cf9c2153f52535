import { waitFor } from '@clinic/platform/testing'
import {
  appointmentCreated,
  principal,
  startReceiver,
  startWebhooks,
  type Receiver,
  type Webhooks,
} from '../helpers'

let w: Webhooks
let rx: Receiver
beforeAll(async () => {
  w = await startWebhooks({ limits: { connectMs: 500, totalMs: 1000, maxReadBytes: 8192 } })
  rx = await startReceiver()
})
afterAll(async () => {
  await rx.close()
  await w.close()
})
beforeEach(() => {
  w.policy.allowInsecure = true
  rx.received.length = 0
  rx.answer(() => 200)
  rx.verifyWith([])
})

const create = (p: ReturnType<typeof principal>, body: Record<string, unknown>) =>
  w.as(p)('POST', '/webhooks/endpoints', { event_types: ['*'], ...body })

describe('SSRF: only https to public addresses', () => {
  beforeEach(() => {
    w.policy.allowInsecure = false
    w.dns.set('hooks.example.com', ['93.184.216.34'])
    w.dns.set('internal.example.com', ['93.184.216.34', '10.1.2.3'])
  })
  test.each([
    ['http://127.0.0.1/hook', /must be https/],
    ['https://127.0.0.1/hook', /127.0.0.1 is not a public address/],
    ['https://10.0.0.1/hook', /10.0.0.1 is not a public address/],
    ['https://[::ffff:169.254.169.254]/latest', /not a public address/],
    ['https://[::1]/hook', /not a public address/],
    ['https://[::127.0.0.1]/x', /::7f00:1 is not a public address/],
    ['https://[64:ff9b::a9fe:a9fe]/latest', /not a public address/],
    ['https://169.254.169.254/latest/meta-data', /not a public address/],
    ['https://[fd00:ec2::254]/', /not a public address/],
    ['https://user:pw@hooks.example.com/', /credentials/],
    ['https://internal.example.com/hook', /resolves to 10.1.2.3/],
  ])('%s is 422 unsafe_url', async (url, detail) => {
    const res = await create(principal(), { url })
    expect(res.statusCode).toBe(422)
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/)
    expect(res.json()).toMatchObject({ code: 'unsafe_url', detail: expect.stringMatching(detail) })
  })

  test('a name that resolves elsewhere after creation is checked again at each attempt', async () => {
    const p = principal()
    const res = await create(p, { url: 'https://hooks.example.com/hook' })
    expect(res.statusCode).toBe(201)
    const id = res.json().id as string
    w.dns.set('hooks.example.com', ['127.0.0.1']) // DNS rebinding
    await w.publish([appointmentCreated(p.companyId)])
    await waitFor(async () => {
      const [d] = (await w.as(p)('GET', `/webhooks/endpoints/${id}/deliveries`)).json().data
      return d?.attempts === 1 && d.next_attempt_at !== null && d.last_error !== null
    })
    const [d] = (await w.as(p)('GET', `/webhooks/endpoints/${id}/deliveries`)).json().data
    expect(d).toMatchObject({ status: 'pending', last_status_code: null })
    expect(d.last_error).toMatch(/^unsafe_url: hooks.example.com resolves to 127.0.0.1/)
    expect(rx.received).toHaveLength(0)
  })

  test('PATCH checks the new url too', async () => {
    const p = principal()
    const id = (await create(p, { url: 'https://hooks.example.com/hook' })).json().id as string
    const res = await w.as(p)('PATCH', `/webhooks/endpoints/${id}`, { url: 'https://10.0.0.1/' })
    expect(res.statusCode).toBe(422)
    expect(res.json().code).toBe('unsafe_url')
  })
})

test('no redirect is followed: a 3xx is a failed attempt', async () => {
  const p = principal()
  rx.answer(() => 302)
  const id = (await create(p, { url: rx.url })).json().id as string
  await w.publish([appointmentCreated(p.companyId)])
  await waitFor(
    async () =>
      (await w.as(p)('GET', `/webhooks/endpoints/${id}/deliveries`)).json().data[0]?.last_status_code === 302,
  )
  expect(rx.received).toHaveLength(1)
})

test('a hanging endpoint never holds more than 4 deliveries nor delays a healthy one', async () => {
  const hanging = await startReceiver()
  hanging.answer(() => 'hang')
  try {
    const p = principal()
    const slow = (await create(p, { url: hanging.url })).json().id as string
    const fast = (await create(p, { url: rx.url })).json().id as string
    await w.publish(Array.from({ length: 20 }, () => appointmentCreated(p.companyId)))
    await waitFor(() => rx.received.length === 20)
    expect(hanging.maxInFlight).toBeLessThanOrEqual(4)
    expect(hanging.maxInFlight).toBeGreaterThan(0)
    await waitFor(async () => {
      const rows = (
        await w.as(p)('GET', `/webhooks/endpoints/${slow}/deliveries?status=pending&limit=100`)
      ).json()
      return rows.data.some((d: { last_error: string | null }) =>
        d.last_error?.startsWith('no answer within'),
      )
    })
    expect(fast).toBeDefined()
  } finally {
    await hanging.close()
  }
})

describe('isolation', () => {
  test('a company sees and manages only its endpoints, and gets only its events', async () => {
    const a = principal()
    const b = principal()
    const id = (await create(a, { url: rx.url })).json().id as string
    for (const [method, url, body] of [
      ['GET', `/webhooks/endpoints/${id}`],
      ['PATCH', `/webhooks/endpoints/${id}`, { description: 'x' }],
      ['POST', `/webhooks/endpoints/${id}/rotate-secret`],
      ['POST', `/webhooks/endpoints/${id}/test`],
      ['GET', `/webhooks/endpoints/${id}/deliveries`],
      ['POST', `/webhooks/endpoints/${id}/replay`, { since: new Date().toISOString() }],
    ] as const) {
      const res = await w.as(b)(method, url, body)
      expect([method, url, res.statusCode]).toEqual([method, url, 404])
    }
    expect((await w.as(b)('GET', '/webhooks/endpoints')).json().data).toEqual([])
    await w.publish([appointmentCreated(b.companyId)])
    await w.publish([appointmentCreated(a.companyId)])
    await waitFor(() => rx.received.length === 1)
    await w.worker.idle()
    expect(rx.received).toHaveLength(1)
    const [d] = (await w.as(a)('GET', `/webhooks/endpoints/${id}/deliveries`)).json().data
    expect((await w.as(b)('POST', `/webhooks/deliveries/${d.id}/retry`)).statusCode).toBe(404)
  })

  test('a center-limited token manages only endpoints of its centers and gets only their events', async () => {
    const all = principal()
    const alm1 = principal({ companyId: all.companyId, allowedCenters: ['ALM1'] })
    const noCenter = await create(alm1, { url: rx.url })
    expect(noCenter.statusCode).toBe(403)
    expect(noCenter.json().code).toBe('center_forbidden')
    expect((await create(alm1, { url: rx.url, codalmacen: 'ALM2' })).json().code).toBe('center_forbidden')
    expect((await create(alm1, { url: rx.url, codalmacen: 'NOPE' })).json().code).toBe('unknown_center')
    const mine = (await create(alm1, { url: rx.url, codalmacen: 'ALM1' })).json().id as string
    const companyWide = (await create(all, { url: rx.url })).json().id as string
    expect((await w.as(alm1)('GET', `/webhooks/endpoints/${companyWide}`)).statusCode).toBe(404)
    expect(
      (await w.as(alm1)('GET', '/webhooks/endpoints')).json().data.map((e: { id: string }) => e.id),
    ).toEqual([mine])
    await w.publish([appointmentCreated(all.companyId, 'ALM2')])
    await waitFor(() => rx.received.length === 1) // the company-wide endpoint only
    await w.publish([appointmentCreated(all.companyId, 'ALM1')])
    await waitFor(() => rx.received.length === 3)
    await w.worker.idle()
    expect(rx.received).toHaveLength(3)
  })
})

describe('?codalmacen= (DESIGN.md section 2)', () => {
  /** `w.as` with DELETE too (injectAs types GET, POST and PATCH; any method goes the same way). */
  const send = (
    p: ReturnType<typeof principal>,
    method: 'GET' | 'POST' | 'PATCH' | 'DELETE',
    url: string,
    body?: unknown,
  ) => w.as(p)(method as 'GET', url, body)

  test('an endpoint of another center than the one asked for is 404 on every operation, for a token of every center', async () => {
    const p = principal()
    const alm1 = (await create(p, { url: rx.url, codalmacen: 'ALM1', description: 'uno' })).json()
    const before = (await w.as(p)('GET', `/webhooks/endpoints/${alm1.id}`)).json()
    await w.publish([appointmentCreated(p.companyId, 'ALM1')])
    await waitFor(() => rx.received.length === 1)
    const [d] = (await w.as(p)('GET', `/webhooks/endpoints/${alm1.id}/deliveries`)).json().data
    await waitFor(
      async () =>
        (await w.as(p)('GET', `/webhooks/endpoints/${alm1.id}/deliveries`)).json().data[0]?.status ===
        'succeeded',
    )
    const since = { since: new Date(w.now().getTime() - 3600_000).toISOString() }
    const ops = [
      ['GET', `/webhooks/endpoints/${alm1.id}`],
      ['GET', `/webhooks/endpoints/${alm1.id}/deliveries`],
      ['PATCH', `/webhooks/endpoints/${alm1.id}`, { description: 'changed under ALM2' }],
      ['POST', `/webhooks/endpoints/${alm1.id}/rotate-secret`],
      ['POST', `/webhooks/endpoints/${alm1.id}/test`],
      ['POST', `/webhooks/endpoints/${alm1.id}/replay`, since],
      ['POST', `/webhooks/deliveries/${d.id}/retry`],
      ['DELETE', `/webhooks/endpoints/${alm1.id}`],
    ] as const
    for (const [method, url, body] of ops) {
      const res = await send(p, method, `${url}?codalmacen=ALM2`, body)
      expect([method, url, res.statusCode, res.json().code]).toEqual([method, url, 404, 'not_found'])
    }
    // Nothing changed, nothing was sent again; under its own center (or none) it is there.
    await w.worker.idle()
    expect(rx.received).toHaveLength(1)
    expect((await w.as(p)('GET', `/webhooks/endpoints/${alm1.id}?codalmacen=ALM1`)).json()).toEqual(before)
    expect(
      (await w.as(p)('GET', `/webhooks/endpoints/${alm1.id}/deliveries?codalmacen=ALM1`)).statusCode,
    ).toBe(200)
    const unknown = await w.as(p)('GET', `/webhooks/endpoints/${alm1.id}?codalmacen=NOPE`)
    expect([unknown.statusCode, unknown.json().code]).toEqual([400, 'unknown_center'])
    // A company-wide endpoint (no center) is outside every single center.
    const wide = (await create(p, { url: rx.url })).json().id as string
    expect((await w.as(p)('GET', `/webhooks/endpoints/${wide}?codalmacen=ALM1`)).statusCode).toBe(404)
    expect((await send(p, 'DELETE', `/webhooks/endpoints/${alm1.id}?codalmacen=ALM1`)).statusCode).toBe(204)
  })

  test('on create, ?codalmacen= is the center when the body names none', async () => {
    const p = principal()
    const viaQuery = await w.as(p)('POST', '/webhooks/endpoints?codalmacen=ALM2', {
      url: rx.url,
      event_types: ['*'],
    })
    expect([viaQuery.statusCode, viaQuery.json().codalmacen]).toEqual([201, 'ALM2'])
    const body = await w.as(p)('POST', '/webhooks/endpoints?codalmacen=ALM2', {
      url: rx.url,
      event_types: ['*'],
      codalmacen: 'ALM1',
    })
    expect(body.json().codalmacen).toBe('ALM1')
    // A token limited to ALM1 may create through the query string too, not for another center.
    const alm1 = principal({ companyId: p.companyId, allowedCenters: ['ALM1'] })
    const limited = await w.as(alm1)('POST', '/webhooks/endpoints?codalmacen=ALM1', {
      url: rx.url,
      event_types: ['*'],
    })
    expect([limited.statusCode, limited.json().codalmacen]).toEqual([201, 'ALM1'])
    const other = await w.as(alm1)('POST', '/webhooks/endpoints?codalmacen=ALM2', {
      url: rx.url,
      event_types: ['*'],
    })
    expect([other.statusCode, other.json().code]).toEqual([403, 'center_forbidden'])
  })
})

test('at most 20 endpoints per company', async () => {
  const p = principal()
  for (let i = 0; i < 20; i++) expect((await create(p, { url: rx.url })).statusCode).toBe(201)
  const res = await create(p, { url: rx.url })
  expect(res.statusCode).toBe(422)
  expect(res.json().code).toBe('endpoint_limit_reached')
})

test('the same Idempotency-Key answers the same endpoint and secret', async () => {
  const p = principal()
  const first = await w.as(p)(
    'POST',
    '/webhooks/endpoints',
    { url: rx.url, event_types: ['*'] },
    { 'idempotency-key': 'k1' },
  )
  const again = await w.as(p)(
    'POST',
    '/webhooks/endpoints',
    { url: rx.url, event_types: ['*'] },
    { 'idempotency-key': 'k1' },
  )
  expect(again.statusCode).toBe(201)
  expect(again.headers['idempotent-replayed']).toBe('true')
  expect(again.json()).toEqual(first.json())
  const [row] = await w.owner('idempotency_keys').where({ idempresa: p.companyId }).select('body')
  expect(JSON.stringify(row)).not.toContain(first.json().secret.slice(6))
})
