import { generateKeyPairSync } from 'node:crypto'
import Fastify, {
  type FastifyInstance,
  type RawReplyDefaultExpression,
  type RawRequestDefaultExpression,
  type RawServerDefault,
} from 'fastify'
import type { Logger } from 'pino'
import { Type } from '@sinclair/typebox'
import {
  ASSERTION_HEADER,
  BODY_LIMIT,
  ConfigError,
  RateLimited,
  assertionHeaders,
  createLogger,
  fastifyOptions,
  http,
  isUuid,
  type AssertionSigner,
  type Principal,
} from '@clinic/platform'
import { testAssertionKeys, testPrincipal, testSigner } from '@clinic/platform/testing'

/** The run's gateway key (global setup): what the gateway signs with, and what services verify with. */
const gateway = testSigner()
const keys = testAssertionKeys()
const version = '261122.01'
const problemType = /^application\/problem\+json/

const Thing = Type.Object(
  {
    name: Type.String({ minLength: 1 }),
    email: Type.Optional(Type.String({ format: 'email' })),
    birth_date: Type.Optional(Type.String({ format: 'date' })),
    sex: Type.Optional(
      Type.Union([
        Type.Literal('female'),
        Type.Literal('male'),
        Type.Literal('other'),
        Type.Literal('unknown'),
      ]),
    ),
    kind: Type.Optional(Type.String({ enum: ['a', 'b'] })),
    count: Type.Optional(Type.Integer({ minimum: 0 })),
    guardian: Type.Optional(
      Type.Object(
        { name: Type.String(), phone: Type.Optional(Type.String()) },
        { additionalProperties: false },
      ),
    ),
  },
  { additionalProperties: false },
)

let dbUp = true
const logLines: string[] = []
let app: FastifyInstance<RawServerDefault, RawRequestDefaultExpression, RawReplyDefaultExpression, Logger>
const principal: Principal = testPrincipal({ companyId: 4242 })

/** What the gateway sends for one request: an assertion addressed to `audience` (this app by default). */
async function signed(
  method: string,
  url: string,
  key = gateway,
  requestId = `test-${Date.now().toString(36)}`,
  body?: unknown,
  audience = 'http-unit',
) {
  const sent = body === undefined || typeof body === 'string' ? body : JSON.stringify(body)
  return await assertionHeaders(
    { auth: principal, requestId },
    { method, path: url, body: sent, audience },
    key,
  )
}

function auth(method: string, url: string, requestId?: string) {
  return signed(method, url, gateway, requestId)
}

/** app.inject as the gateway sends it: the assertion covers this URL (query included) and payload. */
async function asGateway(o: {
  method: 'GET' | 'POST'
  url: string
  payload?: string | object
  headers?: Record<string, string>
  requestId?: string
}) {
  const headers = await signed(o.method, o.url, gateway, o.requestId, o.payload)
  return app.inject({
    method: o.method,
    url: o.url,
    payload: o.payload,
    headers: { ...headers, ...o.headers },
  })
}

beforeAll(async () => {
  const logger = createLogger({
    service: 'http-unit',
    level: 'debug',
    destination: { write: (s: string) => void logLines.push(s) },
  })
  app = Fastify(fastifyOptions(logger))
  await app.register(http, {
    service: 'http-unit',
    version,
    assertionKeys: keys,
    readiness: [
      { name: 'database', check: async () => (dbUp ? 1 : Promise.reject(new Error('connection refused'))) },
      { name: 'broker', check: async () => 1 },
    ],
  })
  app.post(
    '/things',
    {
      schema: {
        tags: ['things'],
        summary: 'Create a thing',
        operationId: 'createThing',
        body: Thing,
        response: {
          201: Type.Object({ name: Type.String(), company_id: Type.Integer(), request_id: Type.String() }),
        },
      },
    },
    async (req, reply) => {
      const body = req.body as { name: string }
      // A careless line logging the whole body: redaction must still keep patient data out.
      req.ctx.log.info({ body, patient: { first_name: body.name } }, 'creating a thing')
      return reply.code(201).send({
        name: body.name,
        company_id: req.ctx.auth.companyId,
        request_id: req.ctx.requestId,
        secret_column: 'x',
      })
    },
  )
  app.get(
    '/things',
    {
      schema: {
        querystring: Type.Object({ limit: Type.Integer({ maximum: 100 }) }, { additionalProperties: false }),
      },
    },
    async (req) => ({ limit: (req.query as { limit: number }).limit }),
  )
  app.get('/boom', { schema: { tags: ['things'], summary: 'Fail', operationId: 'boom' } }, async () => {
    throw new Error('relation "patients" does not exist; first_name=Fakefirst')
  })
  app.get(
    '/limited',
    { schema: { tags: ['things'], summary: 'Refuse', operationId: 'limited' } },
    async () => {
      throw new RateLimited(9)
    },
  )
  await app.ready()
})

afterAll(() => app.close())

function expectCommonHeaders(res: { headers: Record<string, unknown> }) {
  expect(res.headers['x-service-version']).toBe(version)
  expect(typeof res.headers['x-request-id']).toBe('string')
  expect(String(res.headers['x-request-id']).length).toBeGreaterThan(0)
}

describe('platform http plugin', () => {
  it('answers 401 problem+json with WWW-Authenticate without a gateway assertion', async () => {
    const res = await app.inject({ method: 'POST', url: '/things', payload: { name: 'x' } })
    expect(res.statusCode).toBe(401)
    expect(res.headers['content-type']).toMatch(problemType)
    expect(res.headers['www-authenticate']).toBe('Basic realm="clinic"')
    expectCommonHeaders(res)
    expect(res.json()).toMatchObject({
      type: 'https://clinic.example/problems/unauthenticated',
      status: 401,
      code: 'unauthenticated',
      request_id: res.headers['x-request-id'],
    })
  })

  it('refuses a forged assertion and one signed for another method or path', async () => {
    const forged = {
      [ASSERTION_HEADER]: (
        await signed('POST', '/things', {
          issuer: 'gateway',
          key: generateKeyPairSync('ed25519').privateKey,
        })
      )[ASSERTION_HEADER]!,
    }
    for (const headers of [forged, await auth('GET', '/things'), await auth('POST', '/other')]) {
      const res = await app.inject({ method: 'POST', url: '/things', headers, payload: { name: 'x' } })
      expect(res.statusCode).toBe(401)
      expect(res.json().code).toBe('unauthenticated')
    }
  })

  it('refuses an assertion addressed to another service: one captured for patients is 401 at appointments', async () => {
    const logger = createLogger({ service: 'aud', level: 'silent' })
    const make = async (service: string) => {
      const a = Fastify(fastifyOptions(logger))
      await a.register(http, { service, version, assertionKeys: keys })
      a.get('/internal/echo', async (req) => ({ company: req.ctx.auth.companyId }))
      return a
    }
    const [patients, appointments] = [await make('patients'), await make('appointments')]
    try {
      const captured = await signed('GET', '/internal/echo', gateway, 'req-aud', undefined, 'patients')
      const replayed = await appointments.inject({ method: 'GET', url: '/internal/echo', headers: captured })
      expect(replayed.statusCode).toBe(401)
      expect(replayed.json().code).toBe('unauthenticated')
      const meant = await patients.inject({ method: 'GET', url: '/internal/echo', headers: captured })
      expect(meant.statusCode).toBe(200)
      expect(meant.json()).toEqual({ company: 4242 })
    } finally {
      await Promise.all([patients.close(), appointments.close()])
    }
    // And this app ('http-unit') refuses one for patients on its own route.
    const res = await app.inject({
      method: 'POST',
      url: '/things',
      headers: await signed('POST', '/things', gateway, 'req-aud2', { name: 'x' }, 'patients'),
      payload: { name: 'x' },
    })
    expect(res.statusCode).toBe(401)
  })

  describe("a service's own keys (one shared key would let any service mint any request)", () => {
    const logger = createLogger({ service: 'keys', level: 'silent' })
    /** The patients service as deployed: the gateway's public key, and comms' as a caller. */
    async function patients() {
      const a = Fastify(fastifyOptions(logger))
      await a.register(http, { service: 'patients', version, assertionKeys: testAssertionKeys(['comms']) })
      a.get('/patients/:id', async (req) => ({ company: req.ctx.auth.companyId }))
      a.get('/internal/patients/:id', { config: { callers: ['comms'] } }, async (req) => ({
        company: req.ctx.auth.companyId,
      }))
      return a
    }
    const as = (signer: AssertionSigner, url: string) =>
      assertionHeaders(
        { auth: testPrincipal({ companyId: 8 }), requestId: 'mint' },
        { method: 'GET', path: url, audience: 'patients' },
        signer,
      )
    /** Everything a compromised comms pod holds: its env (its own private key, public keys). */
    const comms = testSigner('comms')

    it("a service's environment cannot mint an assertion the gateway's routes accept", async () => {
      const app = await patients()
      try {
        const get = async (signer: AssertionSigner, url: string) =>
          app.inject({ method: 'GET', url, headers: await as(signer, url) })
        // comms' key, claiming to be comms: not on a public route of patients.
        expect((await get(comms, '/patients/p1')).statusCode).toBe(401)
        // comms' key, claiming to be the gateway: the signature does not verify.
        expect((await get({ issuer: 'gateway', key: comms.key }, '/patients/p1')).statusCode).toBe(401)
        // The public key it holds is not a signing key (Node refuses to sign with it).
        await expect(
          as({ issuer: 'gateway', key: testAssertionKeys().get('gateway')! }, '/x'),
        ).rejects.toThrow()
        // The gateway's own key works: the route itself is fine.
        expect((await get(gateway, '/patients/p1')).json()).toEqual({ company: 8 })
      } finally {
        await app.close()
      }
    })

    it('an internal route takes only the callers it names, with their own keys', async () => {
      const app = await patients()
      try {
        const get = async (signer: AssertionSigner) =>
          app.inject({
            method: 'GET',
            url: '/internal/patients/p1',
            headers: await as(signer, '/internal/patients/p1'),
          })
        expect((await get(comms)).json()).toEqual({ company: 8 })
        expect((await get(gateway)).statusCode).toBe(401)
        // appointments is a real caller elsewhere, but this route does not name it (nor its key).
        expect((await get(testSigner('appointments'))).statusCode).toBe(401)
        expect((await get({ issuer: 'comms', key: testSigner('appointments').key })).statusCode).toBe(401)
      } finally {
        await app.close()
      }
    })
  })

  it('serves a request with a valid assertion and puts the principal in ctx', async () => {
    const res = await asGateway({
      method: 'POST',
      url: '/things?codalmacen=ALM1',
      requestId: 'req-ok-1',
      payload: { name: 'A thing' },
    })
    expect(res.statusCode).toBe(201)
    expectCommonHeaders(res)
    expect(res.headers['x-request-id']).toBe('req-ok-1')
    // The response schema filters what the handler returns: no stray columns.
    expect(res.json()).toEqual({ name: 'A thing', company_id: 4242, request_id: 'req-ok-1' })
  })

  it('refuses a captured assertion replayed, with another body or another query string', async () => {
    const url = '/things?codalmacen=ALM1'
    const headers = await signed('POST', url, gateway, 'req-replay', { name: 'A thing' })
    const send = (u: string, payload: object) => app.inject({ method: 'POST', url: u, headers, payload })
    expect((await send(url, { name: 'A thing' })).statusCode).toBe(201)
    // Captured, then sent again: as is (a replay), with another body, or with another query.
    for (const [u, payload] of [
      [url, { name: 'A thing' }],
      [url, { name: 'Another thing' }],
      ['/things?codalmacen=ALM2', { name: 'A thing' }],
      ['/things', { name: 'A thing' }],
    ] as const) {
      const res = await send(u, payload)
      expect(res.statusCode).toBe(401)
      expect(res.json().code).toBe('unauthenticated')
    }
    // A fresh assertion for another body is refused when the body sent differs from it.
    const other = await signed('POST', url, gateway, 'req-body', { name: 'Signed' })
    const swapped = await app.inject({ method: 'POST', url, headers: other, payload: { name: 'Sent' } })
    expect(swapped.statusCode).toBe(401)
    // An assertion for no body, and a body sent all the same (by length or chunked).
    for (const framing of [{}, { 'transfer-encoding': 'chunked' }]) {
      const bodyless = await signed('POST', url, gateway, `req-bodyless-${Object.keys(framing).length}`)
      const res = await app.inject({
        method: 'POST',
        url,
        headers: { ...bodyless, ...framing, 'content-type': 'application/json' },
        payload: JSON.stringify({ name: 'Smuggled' }),
      })
      expect(res.statusCode).toBe(401)
    }
  })

  it('lists every bad field of a body at once', async () => {
    const res = await asGateway({
      method: 'POST',
      url: '/things',
      payload: {
        email: 'not-an-email',
        birth_date: '22/11/2026',
        kind: 'c',
        count: 'many',
        idempresa: 9,
        guardian: { phone: '+34000000000' },
      },
    })
    expect(res.statusCode).toBe(400)
    expect(res.headers['content-type']).toMatch(problemType)
    expectCommonHeaders(res)
    const body = res.json()
    expect(body).toMatchObject({
      code: 'validation_failed',
      status: 400,
      title: 'Request is not valid',
      detail: 'The body is not valid',
    })
    expect(body.request_id).toBe(res.headers['x-request-id'])
    expect(body.errors).toEqual(
      expect.arrayContaining([
        { path: '/name', message: 'is required' },
        { path: '/idempresa', message: 'is not an allowed field' },
        { path: '/email', message: 'must be a valid email address' },
        { path: '/birth_date', message: 'must be a valid date (YYYY-MM-DD)' },
        { path: '/kind', message: 'must be one of: a, b' },
        { path: '/count', message: 'must be integer' },
        { path: '/guardian/name', message: 'is required' },
      ]),
    )
    expect(body.errors).toHaveLength(7)
  })

  it('takes body values as sent (no coercion) but coerces query strings', async () => {
    const res = await asGateway({
      method: 'POST',
      url: '/things',
      payload: { name: 'x', count: '5' },
    })
    expect(res.statusCode).toBe(400)
    expect(res.json().errors).toEqual([{ path: '/count', message: 'must be integer' }])
    const listed = await asGateway({
      method: 'GET',
      url: '/things?limit=5',
    })
    expect(listed.statusCode).toBe(200)
    expect(listed.json()).toEqual({ limit: 5 })
  })

  it('reports a bad union value once, not once per branch', async () => {
    const res = await asGateway({
      method: 'POST',
      url: '/things',
      payload: { name: 'x', sex: 'robot' },
    })
    expect(res.statusCode).toBe(400)
    const errors = res.json().errors as Array<{ path: string }>
    expect(errors.length).toBeGreaterThan(0)
    expect(errors.every((e) => e.path === '/sex')).toBe(true)
    expect(new Set(errors.map((e) => JSON.stringify(e))).size).toBe(errors.length)
  })

  it('answers invalid JSON with 400 validation_failed', async () => {
    const res = await asGateway({
      method: 'POST',
      url: '/things',
      headers: { 'content-type': 'application/json' },
      payload: '{"name": ',
    })
    expect(res.statusCode).toBe(400)
    expect(res.headers['content-type']).toMatch(problemType)
    expect(res.json()).toMatchObject({
      code: 'validation_failed',
      errors: [{ path: '', message: 'body must be valid JSON' }],
    })
    expectCommonHeaders(res)
  })

  it('answers 404 problem+json for an unknown route', async () => {
    const res = await app.inject({ method: 'GET', url: '/nowhere', headers: await auth('GET', '/nowhere') })
    expect(res.statusCode).toBe(404)
    expect(res.headers['content-type']).toMatch(problemType)
    expectCommonHeaders(res)
    expect(res.json()).toMatchObject({
      code: 'not_found',
      status: 404,
      type: 'https://clinic.example/problems/not_found',
    })
  })

  it('answers 413 for a body over 64 KiB', async () => {
    const payload = JSON.stringify({ name: 'x'.repeat(BODY_LIMIT + 1) })
    const res = await asGateway({
      method: 'POST',
      url: '/things',
      headers: { 'content-type': 'application/json' },
      payload,
    })
    expect(res.statusCode).toBe(413)
    expect(res.headers['content-type']).toMatch(problemType)
    expect(res.json().code).toBe('payload_too_large')
    expectCommonHeaders(res)
    // Just under the limit is still served.
    const ok = await asGateway({
      method: 'POST',
      url: '/things',
      headers: { 'content-type': 'application/json' },
      payload: JSON.stringify({ name: 'x'.repeat(BODY_LIMIT - 20) }),
    })
    expect(ok.statusCode).toBe(201)
  })

  it.each(['text/plain', 'application/x-www-form-urlencoded', 'application/xml'])(
    'answers 415 for %s',
    async (type) => {
      const res = await asGateway({
        method: 'POST',
        url: '/things',
        headers: { 'content-type': type },
        payload: 'name=x',
      })
      expect(res.statusCode).toBe(415)
      expect(res.headers['content-type']).toMatch(problemType)
      expect(res.json().code).toBe('unsupported_media_type')
      expectCommonHeaders(res)
    },
  )

  it('answers an unexpected error with a generic 500 and logs it in full', async () => {
    logLines.length = 0
    const res = await app.inject({
      method: 'GET',
      url: '/boom',
      headers: await auth('GET', '/boom', 'req-boom'),
    })
    expect(res.statusCode).toBe(500)
    expect(res.headers['content-type']).toMatch(problemType)
    expectCommonHeaders(res)
    expect(res.json()).toMatchObject({ code: 'internal_error', status: 500, request_id: 'req-boom' })
    expect(res.body).not.toContain('relation')
    expect(res.body).not.toContain('Fakefirst')
    const logged = logLines.map((l) => JSON.parse(l)).find((l) => l.msg === 'request failed')
    expect(logged).toMatchObject({ level: 50, request_id: 'req-boom', service: 'http-unit' })
    expect(logged.err.stack).toContain('relation "patients"')
  })

  it('sends the headers an AppError carries', async () => {
    const res = await app.inject({ method: 'GET', url: '/limited', headers: await auth('GET', '/limited') })
    expect(res.statusCode).toBe(429)
    expect(res.headers['retry-after']).toBe('9')
    expect(res.json().code).toBe('rate_limited')
    expectCommonHeaders(res)
  })

  it('keeps a sane client X-Request-Id and replaces one that is not', async () => {
    const sane = await app.inject({
      method: 'GET',
      url: '/health/live',
      headers: { 'x-request-id': 'client-id_1.2:3' },
    })
    expect(sane.headers['x-request-id']).toBe('client-id_1.2:3')
    for (const bad of ['has spaces', 'x'.repeat(200), '<script>']) {
      const res = await app.inject({
        method: 'POST',
        url: '/things',
        headers: { 'x-request-id': bad },
        payload: {},
      })
      expect(res.statusCode).toBe(401)
      expect(res.headers['x-request-id']).not.toBe(bad)
      expect(isUuid(String(res.headers['x-request-id']))).toBe(true)
      expect(res.json().request_id).toBe(res.headers['x-request-id'])
    }
    const none = await app.inject({ method: 'GET', url: '/health/live' })
    expect(isUuid(String(none.headers['x-request-id']))).toBe(true)
  })

  it('serves /health/live and /health/ready publicly; ready is 503 when a check fails', async () => {
    const live = await app.inject({ method: 'GET', url: '/health/live' })
    expect(live.statusCode).toBe(200)
    expectCommonHeaders(live)
    const ready = await app.inject({ method: 'GET', url: '/health/ready' })
    expect(ready.statusCode).toBe(200)
    expect(ready.json()).toEqual({ status: 'ok', checks: { database: 'ok', broker: 'ok' } })
    dbUp = false
    try {
      const down = await app.inject({ method: 'GET', url: '/health/ready' })
      expect(down.statusCode).toBe(503)
      expect(down.json()).toEqual({ status: 'unavailable', checks: { database: 'down', broker: 'ok' } })
      expectCommonHeaders(down)
    } finally {
      dbUp = true
    }
  })

  it('serves Prometheus metrics to the internal network, with request durations by route', async () => {
    await app.inject({ method: 'GET', url: '/health/live' })
    const res = await app.inject({ method: 'GET', url: '/metrics' })
    expect(res.statusCode).toBe(200)
    expect(res.headers['content-type']).toMatch(/^text\/plain; version=0\.0\.4/)
    expectCommonHeaders(res)
    expect(res.body).toContain('# TYPE http_request_duration_seconds histogram')
    const live = res.body
      .split('\n')
      .find((l) => l.startsWith('http_request_duration_seconds_count{') && l.includes('route="/health/live"'))
    expect(live).toBeDefined()
    for (const label of ['method="GET"', 'status="200"', 'service="http-unit"']) expect(live).toContain(label)
    expect(Number(live!.split(' ').pop())).toBeGreaterThanOrEqual(1)
    expect(res.body).toContain('process_cpu_user_seconds_total')
  })

  it('serves its OpenAPI 3.1 document to the internal network, without the operational routes', async () => {
    const res = await app.inject({ method: 'GET', url: '/openapi.json' })
    expect(res.statusCode).toBe(200)
    expectCommonHeaders(res)
    const doc = res.json()
    expect(doc.openapi).toBe('3.1.0')
    expect(doc.info).toMatchObject({ title: 'clinic http-unit', version })
    expect(doc.paths['/things'].post).toMatchObject({
      operationId: 'createThing',
      tags: ['things'],
      summary: 'Create a thing',
    })
    expect(doc.paths['/things'].post.requestBody.content['application/json'].schema.required).toEqual([
      'name',
    ])
    for (const hidden of ['/health/live', '/health/ready', '/metrics', '/openapi.json'])
      expect(doc.paths[hidden]).toBeUndefined()
  })

  it.each(['/metrics', '/openapi.json'])(
    'answers %s from outside the internal network only with a valid assertion, else the 404 of an unknown route',
    async (url) => {
      const outside = { remoteAddress: '203.0.113.7' }
      const unknown = await app.inject({
        method: 'GET',
        url: '/no-such-route',
        ...outside,
        headers: await signed('GET', '/no-such-route'),
      })
      const res = await app.inject({ method: 'GET', url, ...outside })
      expect(res.statusCode).toBe(404)
      expect(res.headers['content-type']).toMatch(problemType)
      const strip = (b: Record<string, unknown>) => ({ ...b, request_id: undefined })
      expect(strip(res.json())).toEqual(strip(unknown.json()))
      expectCommonHeaders(res)
      // An assertion for another service, or one already used, opens nothing either.
      const other = await app.inject({
        method: 'GET',
        url,
        ...outside,
        headers: await signed('GET', url, gateway, 'm1', undefined, 'patients'),
      })
      expect(other.statusCode).toBe(404)
      const headers = await signed('GET', url, gateway, 'm2')
      expect((await app.inject({ method: 'GET', url, ...outside, headers })).statusCode).toBe(200)
      expect((await app.inject({ method: 'GET', url, ...outside, headers })).statusCode).toBe(404)
      // Private ranges (a pod or Compose network), v4 on a dual-stack socket too, and loopback.
      for (const remoteAddress of [
        '10.1.2.3',
        '::ffff:192.168.4.5',
        '172.20.0.9',
        'fd00::12',
        '127.0.0.1',
        '::1',
      ])
        expect((await app.inject({ method: 'GET', url, remoteAddress })).statusCode).toBe(200)
      for (const remoteAddress of ['172.32.0.1', '100.64.0.1', '::ffff:8.8.8.8', '2001:db8::1'])
        expect((await app.inject({ method: 'GET', url, remoteAddress })).statusCode).toBe(404)
    },
  )

  it('takes the internal ranges from INTERNAL_NETWORKS (loopback always), and refuses a bad range at start-up', async () => {
    const logger = createLogger({ service: 'nets', level: 'silent' })
    const nets = Fastify(fastifyOptions(logger))
    await nets.register(http, {
      service: 'nets',
      version,
      assertionKeys: keys,
      internalNetworks: ['100.64.0.0/10', '198.51.100.7'],
    })
    try {
      for (const [remoteAddress, status] of [
        ['100.64.3.4', 200],
        ['198.51.100.7', 200],
        ['198.51.100.8', 404],
        ['10.1.2.3', 404],
        ['127.0.0.1', 200],
      ] as const)
        expect((await nets.inject({ method: 'GET', url: '/metrics', remoteAddress })).statusCode).toBe(status)
    } finally {
      await nets.close()
    }
    for (const bad of ['10.0.0.0/33', 'example.com', '10.0.0.0/8/1', 'fc00::/129'])
      await expect(
        Fastify(fastifyOptions(logger)).register(http, {
          service: 'nets',
          version,
          assertionKeys: keys,
          internalNetworks: [bad],
        }),
      ).rejects.toThrow(ConfigError)
  })

  it('logs with service and request_id, and never the assertion, the query string or patient fields', async () => {
    logLines.length = 0
    const headers = await signed('POST', '/things?q=Fakesurname', gateway, 'req-logs', {
      name: 'Fakefirst',
    })
    const res = await app.inject({
      method: 'POST',
      url: '/things?q=Fakesurname',
      headers,
      payload: { name: 'Fakefirst' },
    })
    expect(res.statusCode).toBe(201)
    const recs = logLines.map((l) => JSON.parse(l) as Record<string, unknown>)
    expect(recs.length).toBe(2) // the handler's line, then the access line
    expect(recs[1]).toMatchObject({ msg: 'request', method: 'POST', route: '/things', status: 201 })
    for (const r of recs) {
      expect(r.service).toBe('http-unit')
      expect(r.request_id).toBe('req-logs')
    }
    expect(recs.find((r) => r.msg === 'creating a thing')).toMatchObject({ company_id: 4242 })
    const out = logLines.join('')
    expect(out).not.toContain(headers[ASSERTION_HEADER])
    expect(out).not.toContain('Fakesurname')
    expect(out).not.toContain('Fakefirst')
  })
})
