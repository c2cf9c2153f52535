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
  RateLimited,
  createLogger,
  fastifyOptions,
  http,
  isUuid,
  type Principal,
} from '@clinic/platform'
import { gatewayHeaders, testPrincipal } from '@clinic/platform/testing'

const secret = 'http-unit-secret-0123456789abcdef0123'
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

function auth(method: string, url: string, requestId?: string) {
  return gatewayHeaders(principal, method, url, secret, requestId)
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
    assertionSecret: secret,
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
      [ASSERTION_HEADER]: gatewayHeaders(principal, 'POST', '/things', 'wrong-secret-0123456789abcdef')[
        ASSERTION_HEADER
      ]!,
    }
    for (const headers of [forged, auth('GET', '/things'), auth('POST', '/other')]) {
      const res = await app.inject({ method: 'POST', url: '/things', headers, payload: { name: 'x' } })
      expect(res.statusCode).toBe(401)
      expect(res.json().code).toBe('unauthenticated')
    }
  })

  it('serves a request with a valid assertion and puts the principal in ctx', async () => {
    const res = await app.inject({
      method: 'POST',
      url: '/things?codalmacen=ALM1',
      headers: auth('POST', '/things', 'req-ok-1'),
      payload: { name: 'A thing' },
    })
    expect(res.statusCode).toBe(201)
    expectCommonHeaders(res)
    expect(res.headers['x-request-id']).toBe('req-ok-1')
    // The response schema filters what the handler returns: no stray columns.
    expect(res.json()).toEqual({ name: 'A thing', company_id: 4242, request_id: 'req-ok-1' })
  })

  it('lists every bad field of a body at once', async () => {
    const res = await app.inject({
      method: 'POST',
      url: '/things',
      headers: auth('POST', '/things'),
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
    const res = await app.inject({
      method: 'POST',
      url: '/things',
      headers: auth('POST', '/things'),
      payload: { name: 'x', count: '5' },
    })
    expect(res.statusCode).toBe(400)
    expect(res.json().errors).toEqual([{ path: '/count', message: 'must be integer' }])
    const listed = await app.inject({
      method: 'GET',
      url: '/things?limit=5',
      headers: auth('GET', '/things'),
    })
    expect(listed.statusCode).toBe(200)
    expect(listed.json()).toEqual({ limit: 5 })
  })

  it('reports a bad union value once, not once per branch', async () => {
    const res = await app.inject({
      method: 'POST',
      url: '/things',
      headers: auth('POST', '/things'),
      payload: { name: 'x', sex: 'robot' },
    })
    expect(res.statusCode).toBe(400)
    const errors = res.json().errors as Array<{ path: string }>
    expect(errors.length).toBeGreaterThan(0)
    expect(errors.every((e) => e.path === '/sex')).toBe(true)
    expect(new Set(errors.map((e) => JSON.stringify(e))).size).toBe(errors.length)
  })

  it('answers invalid JSON with 400 validation_failed', async () => {
    const res = await app.inject({
      method: 'POST',
      url: '/things',
      headers: { ...auth('POST', '/things'), 'content-type': 'application/json' },
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
    const res = await app.inject({ method: 'GET', url: '/nowhere', headers: auth('GET', '/nowhere') })
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
    const res = await app.inject({
      method: 'POST',
      url: '/things',
      headers: { ...auth('POST', '/things'), 'content-type': 'application/json' },
      payload,
    })
    expect(res.statusCode).toBe(413)
    expect(res.headers['content-type']).toMatch(problemType)
    expect(res.json().code).toBe('payload_too_large')
    expectCommonHeaders(res)
    // Just under the limit is still served.
    const ok = await app.inject({
      method: 'POST',
      url: '/things',
      headers: { ...auth('POST', '/things'), 'content-type': 'application/json' },
      payload: JSON.stringify({ name: 'x'.repeat(BODY_LIMIT - 20) }),
    })
    expect(ok.statusCode).toBe(201)
  })

  it.each(['text/plain', 'application/x-www-form-urlencoded', 'application/xml'])(
    'answers 415 for %s',
    async (type) => {
      const res = await app.inject({
        method: 'POST',
        url: '/things',
        headers: { ...auth('POST', '/things'), 'content-type': type },
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
    const res = await app.inject({ method: 'GET', url: '/boom', headers: auth('GET', '/boom', 'req-boom') })
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
    const res = await app.inject({ method: 'GET', url: '/limited', headers: auth('GET', '/limited') })
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

  it('serves Prometheus metrics publicly, with request durations by route', async () => {
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

  it('serves its OpenAPI 3.1 document publicly, without the operational routes', async () => {
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

  it('logs with service and request_id, and never the assertion, the query string or patient fields', async () => {
    logLines.length = 0
    const headers = auth('POST', '/things', 'req-logs')
    const res = await app.inject({
      method: 'POST',
      url: '/things?q=Fakesurname',
      headers,
      payload: { name: 'Fakefirst' },
    })
    expect(res.statusCode).toBe(201)
    const recs = logLines.map((l) => JSON.parse(l) as Record<string, unknown>)
    expect(recs.length).toBeGreaterThanOrEqual(3) // incoming, the handler's line, completed
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
