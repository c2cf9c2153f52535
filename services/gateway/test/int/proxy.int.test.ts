import type { AddressInfo } from 'node:net'
import Fastify, { type InjectOptions, type LightMyRequestResponse } from 'fastify'
import type { Knex } from 'knex'
import {
  ASSERTION_HEADER,
  bodyHashOf,
  createLogger,
  unpackAccessBatch,
  verifyAssertion,
} from '@clinic/platform'
import {
  FakeUpstream,
  VERIFY_KEYS,
  accessEvents,
  VERSION,
  deadUrl,
  gateway,
  infra,
  tenant,
  upstreamsTo,
  type Received,
  userToken,
} from './harness'

const PATIENT = '0190c5a0-1234-7abc-8def-0123456789ab'

let env: Awaited<ReturnType<typeof infra>>
let knex: Knex
let upstream: FakeUpstream
let gw: Awaited<ReturnType<typeof gateway>>

beforeAll(async () => {
  env = await infra()
  knex = env.knex
  upstream = await new FakeUpstream('echo').start()
  gw = await gateway({
    knex,
    amqp: env.amqp,
    // audit points at nothing: the 503 path.
    upstreams: upstreamsTo(upstream.url, { audit: await deadUrl() }),
    corsOrigins: ['https://portal.example'],
  })
})
afterAll(async () => {
  await gw?.close()
  await upstream?.close()
  await env?.close()
})

const inject = (o: InjectOptions) => gw.app.inject(o)
const json = (res: LightMyRequestResponse) => res.json() as Record<string, unknown>
const echoed = (res: LightMyRequestResponse) => res.json() as Received
const problem = (res: LightMyRequestResponse) => {
  expect(res.headers['content-type']).toMatch(/^application\/problem\+json/)
  return json(res)
}

describe('forwarding to the services', () => {
  it('sends a signed assertion for the rewritten path and none of the client credentials or tenant hints', async () => {
    const t = await tenant(knex, { centers: ['ALM1'] })
    const forged = 'v1.forged.assertion'
    const res = await inject({
      method: 'GET',
      url: `/api/3/patients/${PATIENT}?codalmacen=ALM1&q=x`,
      headers: {
        ...t.headers,
        cookie: 'session=abc',
        'x-idempresa': '999',
        idempresa: '999',
        'x-tenant-id': '999',
        'x-clinic-company': '999',
        forwarded: 'for=6.6.6.6;host=evil.example',
        'x-forwarded-host': 'evil.example',
        'x-forwarded-proto': 'http',
        'x-forwarded-for': '6.6.6.6',
        'x-real-ip': '6.6.6.6',
        'x-original-url': '/internal/patients',
        [ASSERTION_HEADER]: forged,
        'x-request-id': 'client-req-1',
        accept: 'application/json',
      },
    })
    expect(res.statusCode).toBe(200)
    const got = echoed(res)
    expect(got.method).toBe('GET')
    expect(got.url).toBe(`/patients/${PATIENT}?codalmacen=ALM1&q=x`)
    for (const h of [
      'x-service-token',
      'authorization',
      'cookie',
      'x-idempresa',
      'idempresa',
      'x-tenant-id',
      'x-clinic-company',
      'forwarded',
      'x-forwarded-host',
      'x-forwarded-proto',
      'x-real-ip',
      'x-original-url',
    ])
      expect(got.headers).not.toHaveProperty(h)
    // X-Forwarded-For is the gateway's own: the address it trusts (TRUST_PROXY off: the peer).
    expect(got.headers['x-forwarded-for']).toBe('127.0.0.1')
    expect(JSON.stringify(got.headers)).not.toContain(t.token)
    expect(got.headers[ASSERTION_HEADER]).not.toBe(forged)
    expect(got.headers.accept).toBe('application/json')
    expect(got.headers['x-request-id']).toBe('client-req-1')

    const verified = await verifyAssertion(got.headers[ASSERTION_HEADER] as string, VERIFY_KEYS(), {
      method: 'GET',
      path: `/patients/${PATIENT}`,
      query: 'codalmacen=ALM1&q=x',
      audience: 'patients',
    })
    // The names people are shown travel only to the families that show them (services.json `names`).
    expect(verified.ok && verified.claims.names).toBeUndefined()
    expect(verified).toEqual({
      ok: true,
      claims: expect.objectContaining({
        aud: 'patients',
        companyId: t.companyId,
        userId: t.userId,
        username: t.username,
        tokenId: t.tokenId,
        companyCenters: ['ALM1', 'ALM2'],
        allowedCenters: ['ALM1'],
        requestId: 'client-req-1',
        method: 'GET',
        path: `/patients/${PATIENT}`,
        query: 'codalmacen=ALM1&q=x',
        bodyHash: '',
      }),
    })
    // Bound to this request: not valid for another path, nor at another service.
    expect(
      (
        await verifyAssertion(got.headers[ASSERTION_HEADER] as string, VERIFY_KEYS(), {
          method: 'GET',
          path: '/patients',
        })
      ).ok,
    ).toBe(false)
    expect(
      await verifyAssertion(got.headers[ASSERTION_HEADER] as string, VERIFY_KEYS(), {
        method: 'GET',
        path: `/patients/${PATIENT}`,
        query: 'codalmacen=ALM1&q=x',
        audience: 'appointments',
      }),
    ).toEqual({ ok: false, reason: 'audience' })
    expect(res.headers['x-request-id']).toBe('client-req-1')
  })

  it("carries the company's and centers' names to the families that show them (consents), and only there", async () => {
    const t = await tenant(knex, { centers: ['ALM1'] })
    const claimsAt = async (url: string, path: string, audience: string) => {
      const got = echoed(await inject({ method: 'GET', url, headers: t.headers }))
      const v = await verifyAssertion(got.headers[ASSERTION_HEADER] as string, VERIFY_KEYS(), {
        method: 'GET',
        path,
        audience,
      })
      return v.ok ? v.claims : null
    }
    const consents = await claimsAt('/api/consents', '/consents', 'documents')
    expect(consents?.names).toEqual({ company: expect.any(String), centers: expect.any(Object) })
    expect(Object.keys(consents!.names!.centers).sort()).toEqual(['ALM1', 'ALM2'])
    // Documents' other family, and every other service: none.
    expect((await claimsAt('/api/documents', '/documents', 'documents'))?.names).toBeUndefined()
    expect((await claimsAt('/api/appointments', '/appointments', 'appointments'))?.names).toBeUndefined()
  })

  it('strips Authorization too when the client uses Basic, under the /api base', async () => {
    const t = await tenant(knex)
    const res = await inject({
      method: 'GET',
      url: '/api/appointments',
      headers: {
        authorization: `Basic ${Buffer.from(`${t.username.toUpperCase()}:${t.token}`).toString('base64')}`,
      },
    })
    expect(res.statusCode).toBe(200)
    const got = echoed(res)
    expect(got.url).toBe('/appointments')
    expect(got.headers).not.toHaveProperty('authorization')
    const v = await verifyAssertion(got.headers[ASSERTION_HEADER] as string, VERIFY_KEYS(), {
      method: 'GET',
      path: '/appointments',
      audience: 'appointments',
    })
    expect(v.ok && v.claims.companyId).toBe(t.companyId)
  })

  it('rewrites a service-relative Location onto the base the client used', async () => {
    const t = await tenant(knex)
    for (const base of ['/api', '/api/3']) {
      const res = await inject({
        method: 'POST',
        url: `${base}/patients`,
        headers: { ...t.headers, 'content-type': 'application/json' },
        payload: { first_name: 'Test' },
      })
      expect(res.statusCode).toBe(201)
      const { id } = json(res) as { id: string }
      expect(res.headers.location).toBe(`${base}/patients/${id}`)
      const v = await verifyAssertion(echoed(res).headers[ASSERTION_HEADER] as string, VERIFY_KEYS(), {
        method: 'POST',
        path: '/patients',
      })
      expect(v.ok).toBe(true)
      // Bound to the exact body the service receives.
      expect(v.ok && v.claims.bodyHash).toBe(bodyHashOf(JSON.stringify({ first_name: 'Test' })))
    }
  })

  it('never reaches a service without a valid token', async () => {
    const before = upstream.received.length
    const revoked = await tenant(knex, { revoked: true })
    for (const headers of [
      {},
      { 'x-service-token': 'csk_nope' },
      revoked.headers,
      { authorization: 'Bearer x' },
    ]) {
      const res = await inject({ method: 'GET', url: '/api/3/patients', headers })
      expect(res.statusCode).toBe(401)
      expect(res.headers['www-authenticate']).toBe('Basic realm="clinic"')
      expect(problem(res)).toMatchObject({ status: 401, code: 'unauthenticated' })
    }
    expect(upstream.received.length).toBe(before)
  })

  it('tells a client that sent no token in a form it reads (Bearer too) the two forms it takes', async () => {
    const t = await tenant(knex)
    const basicWithoutUser = Buffer.from(t.token).toString('base64')
    for (const headers of [
      {},
      { authorization: `Bearer ${t.token}` },
      { authorization: `Basic ${basicWithoutUser}` },
    ]) {
      const res = await inject({ method: 'GET', url: '/api/patients', headers })
      expect(res.statusCode).toBe(401)
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/)
      expect(res.headers['www-authenticate']).toBe('Basic realm="clinic"')
      const p = problem(res) as { code: string; detail: string }
      expect(p.code).toBe('unauthenticated')
      expect(p.detail).toMatch(/X-service-Token header/)
      expect(p.detail).toMatch(/HTTP Basic credentials username:token/)
    }
    // A token in an accepted form that is refused says only that: nothing to learn about the form.
    const unknown = await inject({
      method: 'GET',
      url: '/api/patients',
      headers: { 'x-service-token': 'csk_nope' },
    })
    expect(problem(unknown)).toMatchObject({
      code: 'unauthenticated',
      detail: 'A valid API token is required',
    })
  })
})

describe('a long poll through the gateway', () => {
  it('is not a slow request for the wait it asked for (GET /events?wait=); any other slow answer is', async () => {
    // A service that takes 1.1 s over everything, as the change feed does when asked to wait: on
    // the gateway's clock, which the service moves instead of sleeping.
    let now = 0
    const slowService = Fastify()
    slowService.all('/*', async () => {
      now += 1100
      return { data: [], meta: { next: 'x' } }
    })
    await slowService.listen({ port: 0, host: '127.0.0.1' })
    const slowUrl = `http://127.0.0.1:${(slowService.server.address() as AddressInfo).port}`
    const lines: Array<{ msg: string; level: number; route?: string; status?: number }> = []
    const logger = createLogger({
      service: 'gateway-test',
      level: 'info',
      destination: { write: (line: string) => void lines.push(JSON.parse(line)) },
    })
    const g = await gateway({
      knex,
      amqp: env.amqp,
      upstreams: upstreamsTo(slowUrl),
      logger,
      clock: () => now,
    })
    try {
      const t = await tenant(knex)
      for (const url of [
        '/api/events?wait=30',
        '/api/3/events?wait=2',
        '/api/events',
        '/api/patients?wait=30',
      ])
        expect((await g.app.inject({ method: 'GET', url, headers: t.headers })).statusCode).toBe(200)
      const access = lines.filter((l) => l.status === 200).map((l) => [l.route, l.msg, l.level])
      expect(access).toEqual([
        ['/api/events', 'request', 30],
        ['/api/3/events', 'request', 30],
        ['/api/events', 'slow request', 40],
        ['/api/patients', 'slow request', 40],
      ])
    } finally {
      await g.close()
      await slowService.close()
    }
  })
})

describe('TRUST_PROXY', () => {
  it('with one trusted hop, records the address the proxy saw, not one the client wrote', async () => {
    const behind = await gateway({
      knex,
      amqp: env.amqp,
      upstreams: upstreamsTo(upstream.url),
      trustProxy: 1,
    })
    try {
      const t = await tenant(knex)
      await behind.app.inject({
        method: 'GET',
        url: `/api/3/patients/${PATIENT}`,
        // The client wrote 6.6.6.6; the load balancer (the peer) appended the address it saw.
        headers: { ...t.headers, 'x-forwarded-for': '6.6.6.6, 203.0.113.9' },
      })
      const [event] = await accessEvents(knex, 'http.request', t.companyId)
      expect(event!.data.ip).toBe('203.0.113.9')
    } finally {
      await behind.close()
    }
  })
})

describe('ambiguous credentials', () => {
  it('refuses a token and Basic credentials together with 400, never guessing which is meant', async () => {
    const before = upstream.received.length
    const t = await tenant(knex)
    const other = await tenant(knex)
    const res = await inject({
      method: 'GET',
      url: '/api/3/patients',
      headers: {
        ...t.headers,
        authorization: `Basic ${Buffer.from(`${other.username}:${other.token}`).toString('base64')}`,
      },
    })
    expect(res.statusCode).toBe(400)
    expect(problem(res)).toMatchObject({ status: 400, code: 'ambiguous_credentials' })
    expect(upstream.received.length).toBe(before)
  })
})

describe('provider webhooks (services.json `webhooks`)', () => {
  const form = 'MessageSid=SM123&MessageStatus=delivered'
  const formHeaders = { 'content-type': 'application/x-www-form-urlencoded', 'x-twilio-signature': 'sig' }

  it('forwards a form POST without a token, with no assertion and no client credentials, under both bases', async () => {
    for (const base of ['/api', '/api/3']) {
      const res = await inject({
        method: 'POST',
        url: `${base}/comms/webhooks/twilio`,
        headers: { ...formHeaders, 'x-service-token': 'csk_whatever', 'x-clinic-assertion': 'forged' },
        payload: form,
      })
      expect(res.statusCode).toBe(201)
      expect(res.headers['x-service-version']).toBe(VERSION)
      const got = upstream.received.at(-1)!
      expect(got.url).toBe('/comms/webhooks/twilio')
      expect(got.form).toBe(form)
      expect(got.headers['x-twilio-signature']).toBe('sig')
      expect(got.headers[ASSERTION_HEADER]).toBeUndefined()
      expect(got.headers['x-service-token']).toBeUndefined()
    }
  })

  it('keeps every other comms route, and other methods on the webhook path, behind a token', async () => {
    const before = upstream.received.length
    for (const [method, url] of [
      ['GET', '/api/comms/webhooks/twilio'],
      ['POST', '/api/comms/webhooks/other'],
      ['POST', '/api/comms/send'],
    ] as const) {
      const res = await inject({
        method,
        url,
        headers: formHeaders,
        payload: method === 'POST' ? form : undefined,
      })
      expect(res.statusCode).toBe(401)
    }
    expect(upstream.received.length).toBe(before)
  })

  it('accepts form bodies only there', async () => {
    const t = await tenant(knex)
    const res = await inject({
      method: 'POST',
      url: '/api/patients',
      headers: { ...t.headers, 'content-type': 'application/x-www-form-urlencoded' },
      payload: form,
    })
    expect(res.statusCode).toBe(415)
  })
})

describe('hop-by-hop headers stay on their hop', () => {
  it('does not forward Expect: 100-continue (undici refuses it: it was a 503) nor Connection, and returns no upstream keep-alive', async () => {
    const t = await tenant(knex)
    const res = await inject({
      method: 'POST',
      url: '/api/3/patients',
      headers: {
        ...t.headers,
        'content-type': 'application/json',
        expect: '100-continue',
        connection: 'close',
      },
      payload: JSON.stringify({ first_name: 'Ana' }),
    })
    expect(res.statusCode).toBe(201)
    expect(echoed(res).headers.expect).toBeUndefined()
    expect(echoed(res).headers.connection).not.toBe('close')
    expect(res.headers['keep-alive']).toBeUndefined()
  })
})

describe('body limits by route (services.json body_limits)', () => {
  it('forwards a send with a 100 KiB body, which is 413 on any other route; above its own limit it is 413 too', async () => {
    const t = await tenant(knex)
    const post = (url: string, size: number) =>
      inject({
        method: 'POST',
        url,
        headers: { ...t.headers, 'content-type': 'application/json' },
        payload: JSON.stringify({ body: 'x'.repeat(size) }),
      })
    const send = await post('/api/comms/send', 100 * 1024)
    expect(send.statusCode).toBe(201)
    expect(echoed(send).url).toBe('/comms/send')
    expect((await post('/api/comms/messages', 100 * 1024)).statusCode).toBe(413)
    expect((await post('/api/patients', 100 * 1024)).statusCode).toBe(413)
    const huge = await post('/api/3/comms/send', 400 * 1024)
    expect([huge.statusCode, problem(huge).code]).toEqual([413, 'payload_too_large'])
  })
})

describe('X-service-Version on every answer', () => {
  let t: Awaited<ReturnType<typeof tenant>>
  beforeAll(async () => (t = await tenant(knex)))

  it.each([
    [
      '200 proxied',
      () => ({ method: 'GET' as const, url: '/api/3/patients', headers: t.headers }),
      200,
      null,
    ],
    ['401 no token', () => ({ method: 'GET' as const, url: '/api/3/patients' }), 401, 'unauthenticated'],
    [
      '404 unknown route',
      () => ({ method: 'GET' as const, url: '/api/3/nothing-here', headers: t.headers }),
      404,
      'not_found',
    ],
    [
      '413 big body',
      () => ({
        method: 'POST' as const,
        url: '/api/3/patients',
        headers: { ...t.headers, 'content-type': 'application/json' },
        payload: JSON.stringify({ notes: 'x'.repeat(70 * 1024) }),
      }),
      413,
      'payload_too_large',
    ],
    [
      '415 not JSON',
      () => ({
        method: 'POST' as const,
        url: '/api/3/patients',
        headers: { ...t.headers, 'content-type': 'text/plain' },
        payload: 'hello',
      }),
      415,
      'unsupported_media_type',
    ],
    [
      '503 service down',
      () => ({ method: 'GET' as const, url: '/api/3/audit/events', headers: t.headers }),
      503,
      'upstream_unavailable',
    ],
  ])('%s', async (_name, request, status, code) => {
    const before = upstream.received.length
    const res = await inject(request())
    expect(res.statusCode).toBe(status)
    expect(res.headers['x-service-version']).toBe(VERSION)
    expect(res.headers['x-request-id']).toBeTruthy()
    if (code) expect(problem(res)).toMatchObject({ status, code, request_id: res.headers['x-request-id'] })
    if (status !== 200) expect(upstream.received.length).toBe(before)
    if (status === 503) expect(Number(res.headers['retry-after'])).toBeGreaterThan(0)
  })
})

describe('codalmacen', () => {
  it('is checked against the company and the token before anything is forwarded', async () => {
    const t = await tenant(knex, { centers: ['ALM1'] })
    const before = upstream.received.length
    const get = (qs: string) => inject({ method: 'GET', url: `/api/3/patients?${qs}`, headers: t.headers })

    const unknown = await get('codalmacen=ZZZ')
    expect(unknown.statusCode).toBe(400)
    expect(problem(unknown).code).toBe('unknown_center')

    const forbidden = await get('codalmacen=ALM2')
    expect(forbidden.statusCode).toBe(403)
    expect(problem(forbidden).code).toBe('center_forbidden')

    for (const qs of [
      'codalmacen=ALM1&codalmacen=ALM2',
      'codalmacen=ALM1&codalmacen=ALM1',
      'codalmacen=bad%20code',
      'codalmacen=ELEVENCHARS',
      'codalmacen=',
    ]) {
      const bad = await get(qs)
      expect(bad.statusCode).toBe(400)
      expect(problem(bad)).toMatchObject({
        code: 'validation_failed',
        errors: [expect.objectContaining({ path: '/codalmacen' })],
      })
    }
    expect(upstream.received.length).toBe(before)

    const ok = await get('codalmacen=ALM1')
    expect(ok.statusCode).toBe(200)
    expect(echoed(ok).url).toBe('/patients?codalmacen=ALM1')
  })

  it('accepts any center of the company for an unrestricted token, and only its own company centers', async () => {
    const t = await tenant(knex)
    const other = await tenant(knex)
    await knex('centers').insert({ idempresa: other.companyId, code: 'ONLYTHERE', name: 'x' })
    expect(
      (await inject({ method: 'GET', url: '/api/patients?codalmacen=ALM2', headers: t.headers })).statusCode,
    ).toBe(200)
    const res = await inject({ method: 'GET', url: '/api/patients?codalmacen=ONLYTHERE', headers: t.headers })
    expect(res.statusCode).toBe(400)
    expect(problem(res).code).toBe('unknown_center')
  })
})

describe('access events', () => {
  const events = (companyId: number) => accessEvents(knex, 'http.request', companyId)

  it('commits the access event before the answer leaves (nothing to flush)', async () => {
    const t = await tenant(knex)
    const answers = await Promise.all(
      Array.from({ length: 20 }, () =>
        inject({ method: 'GET', url: `/api/3/patients/${PATIENT}`, headers: t.headers }),
      ),
    )
    const ids = answers.map((a) => a.headers['x-request-id'])
    expect((await events(t.companyId)).map((e) => e.requestid).sort()).toEqual([...ids].sort())
  })

  it('writes its access events as http.batch rows', async () => {
    const t = await tenant(knex)
    const before = await knex('outbox').max({ id: 'id' })
    await Promise.all(
      Array.from({ length: 20 }, () =>
        inject({ method: 'GET', url: `/api/3/patients/${PATIENT}`, headers: t.headers }),
      ),
    )
    // The rows holding this company's events (other files of the run share the outbox).
    const rows = (await knex('outbox').where('id', '>', before[0]!.id ?? 0)).filter(
      (r) => r.type !== 'http.batch' || unpackAccessBatch(r.payload).some((e) => e.idempresa === t.companyId),
    )
    // How many rows depends on when the answers came (access-log.int.test.ts counts them exactly).
    expect(rows.length).toBeGreaterThan(0)
    expect(new Set(rows.map((r) => r.type))).toEqual(new Set(['http.batch']))
    // No signature of our own: the relay publishes as the gateway's broker user (event-origin.ts).
    for (const r of rows) expect(r.payload.signature).toBeUndefined()
    expect((await events(t.companyId)).length).toBe(20)
  })

  it('records each request in the outbox with actor, path without query, status, ip and resource', async () => {
    const t = await tenant(knex)
    const ok = await inject({
      method: 'GET',
      url: `/api/3/patients/${PATIENT}?codalmacen=ALM2&q=secret-name`,
      headers: { ...t.headers, 'x-forwarded-for': '203.0.113.9' },
    })
    const missing = await inject({ method: 'GET', url: '/api/3/nothing', headers: t.headers })
    await gw.accessLog.flush()
    const [e1, e2, ...rest] = await events(t.companyId)
    expect(rest).toHaveLength(0)
    expect(e1).toMatchObject({
      type: 'http.request',
      source: 'clinic/gateway',
      idempresa: t.companyId,
      codalmacen: 'ALM2',
      subject: PATIENT,
      actorid: t.userId,
      actorname: t.username,
      actortokenid: t.tokenId,
      requestid: ok.headers['x-request-id'],
      data: {
        method: 'GET',
        path: `/api/3/patients/${PATIENT}`,
        status: 200,
        ip: '127.0.0.1', // trustProxy is off: X-Forwarded-For from the client is not believed
        resource_type: 'patient',
        resource_id: PATIENT,
      },
    })
    expect(typeof e1!.data.duration_ms).toBe('number')
    expect(JSON.stringify(e1)).not.toContain('secret-name')
    expect(e2).toMatchObject({
      requestid: missing.headers['x-request-id'],
      data: { method: 'GET', path: '/api/3/nothing', status: 404, resource_type: null, resource_id: null },
    })
  })

  it("counts refusals of found tokens (revoked, expired, another user's) under their company: one http.refused per address and minute", async () => {
    const t = await tenant(knex, { revoked: true })
    const tokenOf = async (expiresAt: Date | null) => (await userToken(knex, t, { expiresAt })).token
    const expired = await tokenOf(new Date(Date.now() - 60_000))
    const valid = await tokenOf(null)
    const basic = (user: string, token: string) => ({
      authorization: `Basic ${Buffer.from(`${user}:${token}`).toString('base64')}`,
    })
    await gw.accessLog.flushRefusals() // what earlier tests left
    const refusals = [
      ...Array.from({ length: 4 }, () => t.headers), // revoked
      ...Array.from({ length: 3 }, () => ({ 'x-service-token': expired })),
      ...Array.from({ length: 3 }, () => basic('someone-else', valid)), // not the token's owner
    ]
    for (const [i, headers] of refusals.entries()) {
      const res = await inject({
        method: i % 2 ? 'GET' : 'POST',
        url: `/api/patients${i % 2 ? `/${PATIENT}` : ''}?q=name-${i}`,
        headers: { ...headers, 'content-type': 'application/json' },
        payload: i % 2 ? undefined : {},
      })
      expect(res.statusCode).toBe(401)
    }
    // An unknown token meanwhile, from the same address: company 0's count, not this company's.
    expect(
      (await inject({ method: 'GET', url: '/api/patients', headers: { 'x-service-token': 'csk_guess' } }))
        .statusCode,
    ).toBe(401)
    await gw.accessLog.flush()
    expect(await events(t.companyId)).toEqual([])
    await gw.accessLog.flushRefusals()
    // One event per minute: two only if the requests straddled a minute's end.
    const counted = await accessEvents(knex, 'http.refused', t.companyId)
    expect(new Set(counted.map((c) => c.data.window_start)).size).toBe(counted.length)
    expect(counted.reduce((n, c) => n + c.data.count, 0)).toBe(10)
    const e = { ...counted[0]!, data: { ...counted[0]!.data, count: 10 } }
    expect(e).toMatchObject({
      idempresa: t.companyId,
      source: 'clinic/gateway',
      data: { ip: '127.0.0.1', count: 10 },
    })
    expect([...e.data.paths].sort()).toEqual(['/api/patients', `/api/patients/${PATIENT}`])
    expect(e).not.toHaveProperty('actorname')
    expect(e).not.toHaveProperty('actorid')
    expect(JSON.stringify(e)).not.toContain('name-')
  })

  it('counts refusals of unknown callers per address and minute: one http.refused event, not a row each', async () => {
    const rid = `refused-${Date.now().toString(36)}`
    await gw.accessLog.flushRefusals() // what earlier tests left
    const before = (await accessEvents(knex, 'http.refused')).length
    for (let i = 0; i < 25; i++)
      expect(
        (
          await inject({
            method: 'GET',
            url: `/api/3/patients/${PATIENT}?q=name-${i}`,
            headers: { 'x-service-token': `csk_guess${i}`, 'x-request-id': `${rid}-${i}` },
          })
        ).statusCode,
      ).toBe(401)
    await gw.accessLog.flush()
    const single = (await accessEvents(knex, 'http.request')).filter((e) => e.requestid?.startsWith(rid))
    expect(single).toEqual([])
    await gw.accessLog.flushRefusals()
    const rows = await accessEvents(knex, 'http.refused')
    expect(rows.length - before).toBe(1)
    expect(rows.at(-1)).toMatchObject({
      idempresa: 0,
      data: { ip: '127.0.0.1', count: 25, paths: [`/api/3/patients/${PATIENT}`] },
    })
    expect(JSON.stringify(rows.at(-1))).not.toContain('name-')
  })

  it('records no http.request for public routes and preflights', async () => {
    const rid = `public-${Date.now().toString(36)}`
    await inject({ method: 'GET', url: '/api/openapi.json', headers: { 'x-request-id': rid } })
    await inject({ method: 'GET', url: '/api/3/health', headers: { 'x-request-id': rid } })
    await inject({
      method: 'OPTIONS',
      url: '/api/patients',
      headers: {
        'x-request-id': rid,
        origin: 'https://portal.example',
        'access-control-request-method': 'GET',
      },
    })
    // A request that is recorded, as a control: the query below does find rows by request id.
    const t = await tenant(knex)
    const control = await inject({
      method: 'GET',
      url: '/api/patients',
      headers: { ...t.headers, 'x-request-id': `${rid}-control` },
    })
    expect(control.statusCode).toBe(200)
    await gw.accessLog.flush()
    const rows = (await accessEvents(knex, 'http.request')).filter((e) => e.requestid?.startsWith(rid))
    expect(rows.map((e) => e.requestid)).toEqual([`${rid}-control`])
  })
})

describe('provider callbacks and preflights on the access trail', () => {
  it('counts them per method, status, address and minute (http.public, company 0), as refusals are', async () => {
    // An address of this test alone, so the counts below are its own.
    const ip = `192.0.2.${1 + Math.floor(Math.random() * 250)}`
    const form = { 'content-type': 'application/x-www-form-urlencoded' }
    await gw.accessLog.flushRefusals() // what earlier tests left
    for (const url of ['/api/comms/webhooks/twilio?x=secret', '/api/3/comms/webhooks/twilio/inbound'])
      expect(
        (await inject({ method: 'POST', url, remoteAddress: ip, headers: form, payload: 'MessageSid=SM1' }))
          .statusCode,
      ).toBe(201)
    // Refused before it reached the service (not a form): counted under its own status.
    expect(
      (
        await inject({
          method: 'POST',
          url: '/api/comms/webhooks/twilio',
          remoteAddress: ip,
          headers: { 'content-type': 'text/plain' },
          payload: 'x',
        })
      ).statusCode,
    ).toBe(415)
    for (let i = 0; i < 3; i++)
      expect(
        (
          await inject({
            method: 'OPTIONS',
            url: '/api/patients',
            remoteAddress: ip,
            headers: { origin: 'https://portal.example', 'access-control-request-method': 'GET' },
          })
        ).statusCode,
      ).toBe(204)
    await gw.accessLog.flushRefusals()
    const rows = (await accessEvents(knex, 'http.public', 0)).filter((e) => e.data.ip === ip)
    const counted = rows
      .map((e) => e.data)
      .map((d) => ({ ...d, paths: [...d.paths].sort() }))
      .sort((a, b) => a.status - b.status)
    expect(counted).toEqual([
      {
        method: 'POST',
        status: 201,
        ip,
        count: 2,
        window_start: expect.any(String),
        paths: ['/api/3/comms/webhooks/twilio/inbound', '/api/comms/webhooks/twilio'],
      },
      {
        method: 'OPTIONS',
        status: 204,
        ip,
        count: 3,
        window_start: expect.any(String),
        paths: ['/api/patients'],
      },
      {
        method: 'POST',
        status: 415,
        ip,
        count: 1,
        window_start: expect.any(String),
        paths: ['/api/comms/webhooks/twilio'],
      },
    ])
    expect(JSON.stringify(rows)).not.toContain('secret')
  })
})

describe('answers are not cached or sniffed', () => {
  it('sends Cache-Control: no-store and X-Content-Type-Options: nosniff on proxied and problem answers', async () => {
    const t = await tenant(knex, { scopes: ['patients:read'] })
    for (const [request, status] of [
      [{ method: 'GET', url: `/api/patients/${PATIENT}`, headers: t.headers }, 200],
      [{ method: 'GET', url: '/api/3/patients' }, 401],
      [{ method: 'GET', url: '/api/audit/events', headers: t.headers }, 403],
      [{ method: 'GET', url: '/api/3/nothing-here', headers: t.headers }, 404],
      [
        {
          method: 'POST',
          url: '/api/comms/webhooks/twilio',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          payload: 'a=b',
        },
        201,
      ],
      // audit is down in this file: the gateway's own 503.
      [{ method: 'GET', url: '/api/health' }, 503],
    ] as const) {
      const res = await inject(request as InjectOptions)
      expect([request.url, res.statusCode]).toEqual([request.url, status])
      expect([request.url, res.headers['cache-control']]).toEqual([request.url, 'no-store'])
      expect([request.url, res.headers['x-content-type-options']]).toEqual([request.url, 'nosniff'])
    }
  })

  it("keeps a service's own Cache-Control", async () => {
    const own = Fastify()
    own.get('/*', async (_req, reply) => reply.header('cache-control', 'private, max-age=60').send({ ok: 1 }))
    await own.listen({ port: 0, host: '127.0.0.1' })
    const behind = await gateway({
      knex,
      amqp: env.amqp,
      upstreams: upstreamsTo(upstream.url, {
        patients: `http://127.0.0.1:${(own.server.address() as AddressInfo).port}`,
      }),
    })
    try {
      const t = await tenant(knex)
      const res = await behind.app.inject({ method: 'GET', url: '/api/patients', headers: t.headers })
      expect(res.statusCode).toBe(200)
      expect(res.headers['cache-control']).toBe('private, max-age=60')
      expect(res.headers['x-content-type-options']).toBe('nosniff')
    } finally {
      await behind.close()
      await own.close()
    }
  })
})

describe('CORS', () => {
  it('answers a preflight from an allowed origin without a token', async () => {
    const res = await inject({
      method: 'OPTIONS',
      url: '/api/3/patients',
      headers: {
        origin: 'https://portal.example',
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'x-service-token,content-type,idempotency-key',
      },
    })
    expect(res.statusCode).toBe(204)
    expect(res.headers['access-control-allow-origin']).toBe('https://portal.example')
    expect(String(res.headers['access-control-allow-methods'])).toContain('POST')
    expect(String(res.headers['access-control-allow-headers']).toLowerCase()).toContain('x-service-token')
    expect(res.headers['x-service-version']).toBe(VERSION)
  })

  it('does not allow other origins', async () => {
    const res = await inject({
      method: 'OPTIONS',
      url: '/api/3/patients',
      headers: { origin: 'https://evil.example', 'access-control-request-method': 'GET' },
    })
    expect(res.headers['access-control-allow-origin']).toBeUndefined()
  })

  it('exposes the version, ETag, Location and request id headers to browser code', async () => {
    const t = await tenant(knex)
    const res = await inject({
      method: 'GET',
      url: '/api/patients',
      headers: { ...t.headers, origin: 'https://portal.example' },
    })
    expect(res.statusCode).toBe(200)
    expect(res.headers['access-control-allow-origin']).toBe('https://portal.example')
    const exposed = String(res.headers['access-control-expose-headers'])
      .split(',')
      .map((h) => h.trim().toLowerCase())
    expect(exposed).toEqual(
      expect.arrayContaining([
        'x-service-version',
        'etag',
        'location',
        'x-request-id',
        'ratelimit-limit',
        'ratelimit-remaining',
        'retry-after',
      ]),
    )
    expect(res.headers.etag).toBe('"1"')
  })
})
