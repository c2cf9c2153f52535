import type { LightMyRequestResponse } from 'fastify'
import type { Knex } from 'knex'
import { ALSO_NEEDED, OPERATION_SCOPES, SCOPES, type Scope } from '../../src/scopes'
import {
  FakeUpstream,
  VERSION,
  accessEvents,
  gateway,
  infra,
  tenant,
  upstreamsTo,
  userToken,
} from './harness'

const ID = '0190c5a0-1234-7abc-8def-0123456789ab'

let env: Awaited<ReturnType<typeof infra>>
let knex: Knex
let upstream: FakeUpstream
let gw: Awaited<ReturnType<typeof gateway>>
let t: Awaited<ReturnType<typeof tenant>>
/** Per scope: a token with every scope but it, and one with it alone. */
const without = new Map<Scope, string>()
const only = new Map<Scope, string>()

/** Another token of the tenant's user, with these scopes. */
const tokenWith = async (scopes: readonly string[]) =>
  (await userToken(knex, t, { scopes: [...scopes] })).token

beforeAll(async () => {
  env = await infra()
  knex = env.knex
  upstream = await new FakeUpstream('echo').start()
  gw = await gateway({ knex, amqp: env.amqp, upstreams: upstreamsTo(upstream.url) })
  t = await tenant(knex)
  for (const scope of SCOPES) {
    without.set(scope, await tokenWith(SCOPES.filter((s) => s !== scope)))
    only.set(scope, await tokenWith([scope]))
  }
})
afterAll(async () => {
  await gw?.close()
  await upstream?.close()
  await env?.close()
})

/** Every operation of the route table, as a request under one of the bases. */
const OPERATIONS = Object.entries(OPERATION_SCOPES).map(([op, scope], i) => {
  const [method, template] = op.split(' ') as [string, string]
  const path = template.replace(/\{[a-z_]+\}/g, (p) => (p === '{id}' ? ID : 'dra-ana'))
  return { method, url: `${i % 2 ? '/api' : '/api/3'}${path}`, scope, also: ALSO_NEEDED[op] ?? [] }
})

const ask = (method: string, url: string, token: string) =>
  gw.app.inject({
    method: method as 'GET',
    url,
    headers: {
      'x-service-token': token,
      ...(method === 'GET' || method === 'DELETE' ? {} : { 'content-type': contentTypeOf(method, url) }),
    },
    payload: method === 'GET' || method === 'DELETE' ? undefined : bodyOf(method, url),
  })

/** An upload (services.json `uploads`) takes multipart; every other body is JSON. */
const isUpload = (method: string, url: string) => method === 'POST' && /\/documents$/.test(url)
const contentTypeOf = (method: string, url: string) =>
  isUpload(method, url) ? 'multipart/form-data; boundary=x' : 'application/json'
const bodyOf = (method: string, url: string) => (isUpload(method, url) ? '--x--\r\n' : '{}')

function expectInsufficient(res: LightMyRequestResponse, scope: string) {
  expect(res.statusCode).toBe(403)
  expect(res.headers['content-type']).toMatch(/^application\/problem\+json/)
  expect(res.headers['x-service-version']).toBe(VERSION)
  expect(res.json()).toMatchObject({
    status: 403,
    code: 'insufficient_scope',
    detail: `This token lacks the scope ${scope}`,
    request_id: res.headers['x-request-id'],
  })
}

describe('scopes (DESIGN.md section 13)', () => {
  it.each(OPERATIONS.filter((o) => !o.also.length))(
    '$method $url: refused without $scope, forwarded with it alone',
    async ({ method, url, scope }) => {
      const before = upstream.received.length
      expectInsufficient(await ask(method, url, without.get(scope)!), scope)
      expect(upstream.received.length).toBe(before)
      const res = await ask(method, url, only.get(scope)!)
      expect([200, 201]).toContain(res.statusCode)
      expect(upstream.received.at(-1)).toMatchObject({ method, url: url.replace(/^\/api(\/3)?/, '') })
    },
  )

  // A subscription hands its events to the URL's owner: a webhooks:manage token that could not read
  // them through GET /events cannot subscribe to them either.
  it.each(OPERATIONS.filter((o) => o.also.length))(
    '$method $url: refused without $scope or with it alone ($also needed too), forwarded with both',
    async ({ method, url, scope, also }) => {
      const before = upstream.received.length
      expectInsufficient(await ask(method, url, without.get(scope)!), scope)
      expectInsufficient(await ask(method, url, only.get(scope)!), also[0]!)
      for (const a of also) expectInsufficient(await ask(method, url, without.get(a)!), a)
      expect(upstream.received.length).toBe(before)
      const res = await ask(method, url, await tokenWith([scope, ...also]))
      expect([200, 201]).toContain(res.statusCode)
      expect(upstream.received.at(-1)).toMatchObject({ method, url: url.replace(/^\/api(\/3)?/, '') })
    },
  )

  it('refuses a webhook subscription to a webhooks:manage token without events:read', async () => {
    const manage = only.get('webhooks:manage')!
    const before = upstream.received.length
    expectInsufficient(await ask('POST', '/api/webhooks/endpoints', manage), 'events:read')
    expectInsufficient(await ask('PATCH', `/api/3/webhooks/endpoints/${ID}`, manage), 'events:read')
    expect(upstream.received.length).toBe(before)
    // The rest of managing endpoints needs no more than webhooks:manage.
    expect((await ask('GET', '/api/webhooks/endpoints', manage)).statusCode).toBe(200)
    expect((await ask('DELETE', `/api/webhooks/endpoints/${ID}`, manage)).statusCode).toBe(200)
  })

  it('lets a token made without a list do everything, as before scopes, but sign clinical records', async () => {
    for (const { method, url, scope } of OPERATIONS)
      if (scope === 'clinical:sign') expectInsufficient(await ask(method, url, t.token), 'clinical:sign')
      else expect([200, 201]).toContain((await ask(method, url, t.token)).statusCode)
  })

  it('asks every scope of a path of a routed family that is no operation of the table', async () => {
    const before = upstream.received.length
    const readAll = await tokenWith(SCOPES.filter((s) => s !== 'webhooks:manage'))
    expectInsufficient(await ask('GET', `/api/patients/${ID}/history`, readAll), 'webhooks:manage')
    expectInsufficient(
      await ask('DELETE', `/api/patients/${ID}`, only.get('patients:write')!),
      'patients:read',
    )
    expect(upstream.received.length).toBe(before)
    // A token with every scope reaches the service, which answers for its own routes; one made
    // without a list lacks clinical:sign, so it is not such a token.
    expectInsufficient(await ask('GET', `/api/patients/${ID}/history`, t.token), 'clinical:sign')
    expect((await ask('GET', `/api/patients/${ID}/history`, await tokenWith(SCOPES))).statusCode).toBe(200)
  })

  it('asks no scope of unknown families and public routes', async () => {
    const none = only.get('events:read')!
    expect((await ask('GET', '/api/nothing-here', none)).statusCode).toBe(404)
    const callback = await gw.app.inject({
      method: 'POST',
      url: '/api/comms/webhooks/twilio',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: 'MessageSid=SM1',
    })
    expect(callback.statusCode).toBe(201)
  })

  it('records the refusal on the access trail as an answer to the token', async () => {
    const token = without.get('audit:read')!
    const res = await ask('GET', '/api/audit/events', token)
    expectInsufficient(res, 'audit:read')
    const [event] = (await accessEvents(knex, 'http.request')).filter(
      (e) => e.requestid === String(res.headers['x-request-id']),
    )
    expect(event!.data).toMatchObject({
      method: 'GET',
      path: '/api/audit/events',
      status: 403,
    })
  })
})
