import { Redis } from 'ioredis'
import type { LightMyRequestResponse } from 'fastify'
import { FakeUpstream, VERSION, expectRateLimited, gateway, infra, tenant, upstreamsTo } from './harness'

let env: Awaited<ReturnType<typeof infra>>
let upstream: FakeUpstream
let redis: Redis[] = []
let a: Awaited<ReturnType<typeof gateway>>
let b: Awaited<ReturnType<typeof gateway>>

beforeAll(async () => {
  env = await infra()
  upstream = await new FakeUpstream('echo').start()
  const upstreams = upstreamsTo(upstream.url)
  // Two gateway replicas, each with its own Redis connection to the same store.
  redis = [
    new Redis('redis://127.0.0.1:6379', { maxRetriesPerRequest: 1 }),
    new Redis('redis://127.0.0.1:6379', { maxRetriesPerRequest: 1 }),
  ]
  a = await gateway({ knex: env.knex, amqp: env.amqp, upstreams, rateLimitPerMinute: 4, redis: redis[0] })
  b = await gateway({ knex: env.knex, amqp: env.amqp, upstreams, rateLimitPerMinute: 4, redis: redis[1] })
})
afterAll(async () => {
  await a?.close()
  await b?.close()
  redis.forEach((r) => r.disconnect())
  await upstream?.close()
  await env?.close()
})

const get = (gw: typeof a, headers: Record<string, string>) =>
  gw.app.inject({ method: 'GET', url: '/api/3/patients', headers })

function expectLimited(res: LightMyRequestResponse) {
  expectRateLimited(res)
  expect(res.headers['ratelimit-limit']).toBe('4')
  expect(res.headers['ratelimit-remaining']).toBe('0')
}

describe('rate limit shared by gateway replicas', () => {
  it('counts one budget per token across both instances', async () => {
    const t = await tenant(env.knex)
    const before = upstream.received.length
    const passed: LightMyRequestResponse[] = []
    for (const gw of [a, b, a, b]) passed.push(await get(gw, t.headers))
    expect(passed.map((r) => r.statusCode)).toEqual([200, 200, 200, 200])
    expect(passed.map((r) => r.headers['ratelimit-limit'])).toEqual(['4', '4', '4', '4'])
    expect(passed.map((r) => r.headers['ratelimit-remaining'])).toEqual(['3', '2', '1', '0'])
    expect(upstream.received.length).toBe(before + 4)

    expectLimited(await get(a, t.headers))
    expectLimited(await get(b, t.headers))
    expect(upstream.received.length).toBe(before + 4)
  })

  it('gives every token its own budget', async () => {
    const t1 = await tenant(env.knex)
    const t2 = await tenant(env.knex)
    for (let i = 0; i < 4; i++) expect((await get(i % 2 ? a : b, t1.headers)).statusCode).toBe(200)
    expectLimited(await get(a, t1.headers))
    const other = await get(b, t2.headers)
    expect(other.statusCode).toBe(200)
    expect(other.headers['ratelimit-remaining']).toBe('3')
  })

  it("answers 401 to requests without a valid token (within the address limit), and they use no token's budget", async () => {
    const t = await tenant(env.knex)
    for (let i = 0; i < 6; i++)
      expect((await get(a, { 'x-service-token': 'csk_wrong' })).statusCode).toBe(401)
    const res = await get(b, t.headers)
    expect(res.statusCode).toBe(200)
    expect(res.headers['ratelimit-remaining']).toBe('3')
  })
})

describe('limits before authentication and on every route', () => {
  it('limits a client address before any token check, across replicas, unknown tokens included', async () => {
    const upstreams = upstreamsTo(upstream.url)
    // A new address namespace per run: the Redis store outlives test runs.
    await redis[0]!.del('clinic-gw-addr-127.0.0.1')
    const opts = { knex: env.knex, amqp: env.amqp, upstreams, rateLimitPerAddressPerMinute: 3 }
    const x = await gateway({ ...opts, redis: redis[0] })
    const y = await gateway({ ...opts, redis: redis[1] })
    try {
      const statuses = []
      for (const gw of [x, y, x, y, x])
        statuses.push((await get(gw, { 'x-service-token': 'csk_guess' })).statusCode)
      expect(statuses).toEqual([401, 401, 401, 429, 429])
      const limited = await get(x, { 'x-service-token': 'csk_guess' })
      expect(limited.json()).toMatchObject({ status: 429, code: 'rate_limited' })
      expect(Number(limited.headers['retry-after'])).toBeGreaterThanOrEqual(1)
    } finally {
      await redis[0]!.del('clinic-gw-addr-127.0.0.1')
      await x.close()
      await y.close()
    }
  })

  it('limits a client address on unknown routes too, with a token or without, before the 404 or 401', async () => {
    const upstreams = upstreamsTo(upstream.url)
    // Counted in this process (no Redis): a fresh budget for this gateway alone.
    const gw = await gateway({ knex: env.knex, amqp: env.amqp, upstreams, rateLimitPerAddressPerMinute: 2 })
    try {
      const t = await tenant(env.knex)
      const ask = (url: string, remoteAddress: string, headers: Record<string, string> = {}) =>
        gw.app.inject({ method: 'GET', url, remoteAddress, headers })
      const withToken = []
      for (const url of ['/api/3/nothing-here', '/api/nothing', '/api/3/nothing-here'])
        withToken.push(await ask(url, '198.51.100.21', t.headers))
      expect(withToken.map((r) => r.statusCode)).toEqual([404, 404, 429])
      const withoutToken = []
      for (const url of ['/nowhere', '/api/3/nothing-here', '/nowhere/at/all'])
        withoutToken.push(await ask(url, '198.51.100.22'))
      expect(withoutToken.map((r) => r.statusCode)).toEqual([401, 401, 429])
      for (const res of [withToken[2]!, withoutToken[2]!]) {
        expect(res.headers['content-type']).toMatch(/^application\/problem\+json/)
        expect(res.json()).toMatchObject({ status: 429, code: 'rate_limited' })
        expect(Number(res.headers['retry-after'])).toBeGreaterThanOrEqual(1)
        expect(res.headers['x-service-version']).toBe(VERSION)
      }
    } finally {
      await gw.close()
    }
  })

  it('a token over its limit gets 429 on unknown routes too, not 404', async () => {
    const t = await tenant(env.knex)
    for (let i = 0; i < 4; i++) expect((await get(a, t.headers)).statusCode).toBe(200)
    const res = await a.app.inject({ method: 'GET', url: '/api/3/nothing-here', headers: t.headers })
    expectLimited(res)
  })
})
