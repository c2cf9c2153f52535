import { randomUUID } from 'node:crypto'
import type { InjectOptions } from 'fastify'
import { ASSERTION_HEADER, createLogger } from '@clinic/platform'
import { ROUTED_SERVICES } from '../../src/families'
import { FakeUpstream, VERSION, gateway, infra, tenant, upstreamsTo } from './harness'

let env: Awaited<ReturnType<typeof infra>>
let comms: FakeUpstream
let others: FakeUpstream
let gw: Awaited<ReturnType<typeof gateway>>

beforeAll(async () => {
  env = await infra()
  comms = await new FakeUpstream('comms').start()
  others = await new FakeUpstream('others').start()
  gw = await gateway({
    knex: env.knex,
    amqp: env.amqp,
    upstreams: upstreamsTo(others.url, { comms: comms.url }),
  })
})
afterAll(async () => {
  await gw?.close()
  await comms?.close()
  await others?.close()
  await env?.close()
})

const inject = (o: InjectOptions) => gw.app.inject(o)
const form = 'action=confirm'
const formHeaders = { 'content-type': 'application/x-www-form-urlencoded' }

describe('pages for people (services.json `pages`)', () => {
  it('routes /p/ to comms, from services.json (no hard-coded service)', () => {
    expect(ROUTED_SERVICES.find((s) => s.pages.includes('/p/'))?.service).toBe('comms')
  })

  it('forwards GET and a form POST outside /api without a token: no assertion, no client credentials; version and request id as always', async () => {
    const t = await tenant(env.knex)
    const token = `tok-${randomUUID()}`
    for (const [method, payload] of [
      ['GET', undefined],
      ['POST', form],
    ] as const) {
      const res = await inject({
        method,
        url: `/p/a/${token}?utm=x`,
        headers: {
          ...(payload ? formHeaders : {}),
          ...t.headers,
          cookie: 'session=abc',
          [ASSERTION_HEADER]: 'v1.forged.assertion',
          'x-request-id': `page-${method}`,
          'accept-language': 'en-GB',
        },
        payload,
      })
      expect(res.statusCode).toBe(method === 'POST' ? 201 : 200)
      expect(res.headers['x-service-version']).toBe(VERSION)
      expect(res.headers['x-request-id']).toBe(`page-${method}`)
      const got = comms.received.at(-1)!
      expect(got).toMatchObject({ method, url: `/p/a/${token}?utm=x` })
      if (payload) expect(got.form).toBe(form)
      for (const h of [ASSERTION_HEADER, 'x-service-token', 'cookie', 'authorization'])
        expect(got.headers).not.toHaveProperty(h)
      expect(got.headers['x-request-id']).toBe(`page-${method}`)
      expect(got.headers['accept-language']).toBe('en-GB')
    }
    expect(others.received.some((r) => r.url.includes(token))).toBe(false)
    // Public: no access event, not even a refusal.
    await gw.accessLog.flushRefusals()
    const events = await env.knex('outbox').whereRaw('payload::text like ?', [`%${token}%`])
    expect(events).toEqual([])
  })

  it('takes forms only, GET and POST only, and only under its prefix', async () => {
    const before = comms.received.length
    const json = await inject({
      method: 'POST',
      url: '/p/a/tok',
      headers: { 'content-type': 'application/json' },
      payload: '{"action":"confirm"}',
    })
    expect(json.statusCode).toBe(415)
    // Other methods are no route of the gateway: a token is needed there, as on any unknown route.
    for (const method of ['PATCH', 'PUT', 'DELETE'] as const)
      expect(
        (await inject({ method, url: '/p/a/tok', headers: formHeaders, payload: form })).statusCode,
      ).toBe(401)
    // Under the API bases, /p is no family.
    expect((await inject({ method: 'GET', url: '/api/p/a/tok' })).statusCode).toBe(401)
    expect((await inject({ method: 'GET', url: '/pages/a/tok' })).statusCode).toBe(401)
    expect(comms.received.length).toBe(before)
  })

  it("logs one access line naming the route, never the link's path or query", async () => {
    const lines: string[] = []
    const logged = await gateway({
      knex: env.knex,
      amqp: env.amqp,
      upstreams: upstreamsTo(comms.url),
      logger: createLogger({
        service: 'gateway',
        level: 'trace',
        destination: { write: (l) => void lines.push(l) },
      }),
    })
    try {
      const token = `secret-${randomUUID()}`
      await logged.app.inject({ method: 'GET', url: `/p/a/${token}?q=Garcia` })
      await logged.app.inject({ method: 'POST', url: `/p/a/${token}`, headers: formHeaders, payload: form })
      expect(lines.join('\n')).not.toMatch(new RegExp(`${token}|Garcia`))
      const access = lines.map((l) => JSON.parse(l)).filter((l) => l.msg === 'request')
      expect(access.map((l) => [l.method, l.route, l.status])).toEqual([
        ['GET', '/p/*', 200],
        ['POST', '/p/*', 201],
      ])
    } finally {
      await logged.close()
    }
  })

  it('is limited per client address like every request', async () => {
    const limited = await gateway({
      knex: env.knex,
      amqp: env.amqp,
      upstreams: upstreamsTo(comms.url),
      rateLimitPerAddressPerMinute: 2,
    })
    try {
      const statuses = []
      for (let i = 0; i < 3; i++)
        statuses.push(
          (await limited.app.inject({ method: 'GET', url: '/p/a/tok', remoteAddress: '198.51.100.40' }))
            .statusCode,
        )
      expect(statuses).toEqual([200, 200, 429])
    } finally {
      await limited.close()
    }
  })
})
