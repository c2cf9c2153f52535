import { Redis } from 'ioredis'
import { FakeUpstream, expectRateLimited, gateway, infra, tenant, upstreamsTo } from './harness'

let env: Awaited<ReturnType<typeof infra>>
let upstream: FakeUpstream
const redis: Redis[] = []

beforeAll(async () => {
  env = await infra()
  upstream = await new FakeUpstream('echo').start()
})
afterAll(async () => {
  redis.forEach((r) => r.disconnect())
  await upstream?.close()
  await env?.close()
})

/** A gateway with the default failure limit (60 a minute) and a generous request limit. */
const limited = (o: { redis?: Redis; failures?: number } = {}) =>
  gateway({
    knex: env.knex,
    amqp: env.amqp,
    upstreams: upstreamsTo(upstream.url),
    authFailuresPerAddressPerMinute: o.failures ?? 60,
    redis: o.redis,
  })

type Gw = Awaited<ReturnType<typeof gateway>>
const ask = (gw: Gw, remoteAddress: string, headers: Record<string, string> = {}) =>
  gw.app.inject({ method: 'GET', url: '/api/3/patients', remoteAddress, headers })
const guess = (i: number) => ({ 'x-service-token': `csk_${String(i).padStart(43, 'x')}` })

const expectLimited = expectRateLimited

describe('failed authentications per address (AUTH_FAILURES_PER_ADDRESS_PER_MINUTE)', () => {
  it('answers 429 to the 61st failure of an address; a valid token is still served, another address still 401', async () => {
    const gw = await limited()
    try {
      const t = await tenant(env.knex)
      const statuses: number[] = []
      for (let i = 0; i < 60; i++) statuses.push((await ask(gw, '198.51.100.7', guess(i))).statusCode)
      expect(new Set(statuses)).toEqual(new Set([401]))
      expectLimited(await ask(gw, '198.51.100.7', guess(60)))
      // Whatever the refused credentials: revoked, malformed, Basic of another user, ambiguous.
      const revoked = await tenant(env.knex, { revoked: true })
      for (const headers of [
        revoked.headers,
        { 'x-service-token': 'not-a-token' },
        { authorization: 'Bearer x' },
        { authorization: `Basic ${Buffer.from(`someone:${t.token}`).toString('base64')}` },
        { ...t.headers, authorization: 'Basic eDp5' },
      ])
        expectLimited(await ask(gw, '198.51.100.7', headers))
      const valid = await ask(gw, '198.51.100.7', t.headers)
      expect(valid.statusCode).toBe(200)
      expect((await ask(gw, '198.51.100.8', guess(61))).statusCode).toBe(401)
      // No credentials at all guess nothing: 401, not counted and not limited.
      expect((await ask(gw, '198.51.100.7')).statusCode).toBe(401)
    } finally {
      await gw.close()
    }
  })

  it('counts no credentials and successes, only failures', async () => {
    const gw = await limited({ failures: 3 })
    try {
      const t = await tenant(env.knex)
      for (let i = 0; i < 10; i++) {
        expect((await ask(gw, '198.51.100.9')).statusCode).toBe(401)
        expect((await ask(gw, '198.51.100.9', t.headers)).statusCode).toBe(200)
      }
      const statuses = []
      for (let i = 0; i < 4; i++) statuses.push((await ask(gw, '198.51.100.9', guess(i))).statusCode)
      expect(statuses).toEqual([401, 401, 401, 429])
      // Ambiguous credentials are failures too (400), then 429.
      const both = { ...t.headers, authorization: 'Basic eDp5' }
      expectLimited(await ask(gw, '198.51.100.9', both))
      expect((await ask(gw, '198.51.100.10', both)).statusCode).toBe(400)
    } finally {
      await gw.close()
    }
  })

  it('counts an IPv6 client by its /64: addresses of one /64 share the count, another /64 has its own', async () => {
    const gw = await limited({ failures: 4 })
    try {
      const statuses = []
      for (const address of [
        '2001:db8:aa:bb::1',
        '2001:db8:aa:bb::2',
        '2001:db8:aa:bb:abcd:ef01:2345:6789',
        '2001:0db8:00aa:00bb:ffff:ffff:ffff:ffff',
        '2001:db8:aa:bb::5',
      ])
        statuses.push((await ask(gw, address, guess(0))).statusCode)
      expect(statuses).toEqual([401, 401, 401, 401, 429])
      expect((await ask(gw, '2001:db8:aa:bc::1', guess(0))).statusCode).toBe(401)
    } finally {
      await gw.close()
    }
  })

  it('is shared by gateways through Redis', async () => {
    redis.push(new Redis('redis://127.0.0.1:6379', { maxRetriesPerRequest: 1 }))
    redis.push(new Redis('redis://127.0.0.1:6379', { maxRetriesPerRequest: 1 }))
    // An address of this run alone: the Redis store outlives runs.
    const address = `10.${Math.floor(Math.random() * 250)}.${Math.floor(Math.random() * 250)}.${Math.floor(Math.random() * 250)}`
    const a = await limited({ redis: redis[0], failures: 2 })
    const b = await limited({ redis: redis[1], failures: 2 })
    try {
      const statuses = []
      for (const gw of [a, b, a, b]) statuses.push((await ask(gw, address, guess(1))).statusCode)
      expect(statuses).toEqual([401, 401, 429, 429])
    } finally {
      await redis[0]!.del(`clinic-gw-authfail-${address}`)
      await a.close()
      await b.close()
    }
  })
})

describe('the per-address request limit keys IPv6 by /64 too', () => {
  it('counts the addresses of one /64 together', async () => {
    const gw = await gateway({
      knex: env.knex,
      amqp: env.amqp,
      upstreams: upstreamsTo(upstream.url),
      rateLimitPerAddressPerMinute: 2,
    })
    try {
      const t = await tenant(env.knex)
      const statuses = []
      for (const address of ['2001:db8:1:2::1', '2001:db8:1:2::2', '2001:db8:1:2:ffff::3'])
        statuses.push((await ask(gw, address, t.headers)).statusCode)
      expect(statuses).toEqual([200, 200, 429])
      expect((await ask(gw, '2001:db8:1:3::1', t.headers)).statusCode).toBe(200)
    } finally {
      await gw.close()
    }
  })
})
