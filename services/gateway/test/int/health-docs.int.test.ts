import { FakeUpstream, VERSION, gateway, infra } from './harness'

const doc = (paths: Record<string, unknown>, schemas: Record<string, unknown>) => ({
  openapi: '3.1.0',
  info: { title: 'x', version: '1' },
  paths,
  components: { schemas },
})

const upstreamsOf = (u: Record<string, FakeUpstream>) =>
  Object.fromEntries(Object.entries(u).map(([name, f]) => [name, f.url])) as Record<keyof typeof u, string>

let env: Awaited<ReturnType<typeof infra>>
let up: Record<
  'patients' | 'appointments' | 'comms' | 'audit' | 'webhooks' | 'clinical' | 'documents',
  FakeUpstream
>
let gw: Awaited<ReturnType<typeof gateway>>
/** The services answer /openapi.json as to a caller outside their internal networks. */
const outside = { openapiFromOutside: true }

beforeAll(async () => {
  env = await infra()
  up = {
    patients: await new FakeUpstream(
      'patients',
      doc(
        {
          '/patients': { get: { operationId: 'listPatients' } },
          '/internal/patients/{id}/contact': { get: { operationId: 'contact' } },
        },
        { Patient: { type: 'object' } },
      ),
      outside,
    ).start(),
    appointments: await new FakeUpstream(
      'appointments',
      doc({ '/appointments': { post: { operationId: 'book' } } }, { Appointment: { type: 'object' } }),
      outside,
    ).start(),
    comms: await new FakeUpstream(
      'comms',
      doc(
        { '/comms/messages': { get: { operationId: 'listMessages' } }, '/internal/send': { post: {} } },
        {},
      ),
      outside,
    ).start(),
    audit: await new FakeUpstream(
      'audit',
      doc(
        { '/audit/events': { get: { operationId: 'listAuditEvents' } } },
        { AuditEvent: { type: 'object' } },
      ),
      outside,
    ).start(),
    webhooks: await new FakeUpstream(
      'webhooks',
      doc(
        { '/webhooks/endpoints': { get: { operationId: 'listWebhookEndpoints' } }, '/events': { get: {} } },
        { WebhookEndpoint: { type: 'object' } },
      ),
      outside,
    ).start(),
    clinical: await new FakeUpstream(
      'clinical',
      doc({ '/clinical/exams': { get: { operationId: 'listClinicalExams' } } }, { Exam: { type: 'object' } }),
      outside,
    ).start(),
    documents: await new FakeUpstream(
      'documents',
      doc(
        { '/documents': { get: { operationId: 'listDocuments' } }, '/consents': { get: {} } },
        { Document: { type: 'object' } },
      ),
      outside,
    ).start(),
  }
  gw = await gateway({ knex: env.knex, amqp: env.amqp, upstreams: upstreamsOf(up) })
})
afterAll(async () => {
  await gw?.close()
  await Promise.all(Object.values(up ?? {}).map((u) => u.close()))
  await env?.close()
})

describe('/api/health', () => {
  afterEach(() => Object.values(up).forEach((u) => (u.ready = true)))

  it('is 200 without a token when the database, the broker and every service are ready', async () => {
    for (const url of ['/api/health', '/api/3/health']) {
      const res = await gw.app.inject({ method: 'GET', url })
      expect(res.statusCode).toBe(200)
      expect(res.headers['x-service-version']).toBe(VERSION)
      expect(res.json()).toEqual({
        status: 'ok',
        version: VERSION,
        checks: {
          database: 'ok',
          broker: 'ok',
          patients: 'ok',
          appointments: 'ok',
          comms: 'ok',
          audit: 'ok',
          webhooks: 'ok',
          clinical: 'ok',
          documents: 'ok',
        },
        down: [],
      })
    }
  })

  it('is 503 naming the service that is not ready, and the part of it that is down', async () => {
    up.comms.ready = false
    const res = await gw.app.inject({ method: 'GET', url: '/api/health' })
    expect(res.statusCode).toBe(503)
    expect(res.headers['x-service-version']).toBe(VERSION)
    expect(res.json()).toEqual({
      status: 'degraded',
      version: VERSION,
      checks: {
        database: 'ok',
        broker: 'ok',
        patients: 'ok',
        appointments: 'ok',
        comms: 'down',
        audit: 'ok',
        webhooks: 'ok',
        clinical: 'ok',
        documents: 'ok',
      },
      down: ['comms.database'],
    })
    up.comms.ready = true
    expect((await gw.app.inject({ method: 'GET', url: '/api/health' })).statusCode).toBe(200)
  })
})

describe('/api/health under load', () => {
  it('asks the services at most once a second, whatever the request rate', async () => {
    const cachedGw = await gateway({
      knex: env.knex,
      amqp: env.amqp,
      upstreams: upstreamsOf(up),
      healthCacheMs: 1000,
    })
    try {
      const before = up.patients.readyCalls
      const answers = await Promise.all(
        Array.from({ length: 50 }, () => cachedGw.app.inject({ method: 'GET', url: '/api/health' })),
      )
      expect(answers.every((a) => a.statusCode === 200)).toBe(true)
      expect(up.patients.readyCalls - before).toBe(1)
    } finally {
      await cachedGw.close()
    }
  })
})

describe('/api/openapi.json', () => {
  it('merges the services documents without a token and leaves /internal paths out', async () => {
    for (const url of ['/api/openapi.json', '/api/3/openapi.json']) {
      const res = await gw.app.inject({ method: 'GET', url })
      expect(res.statusCode).toBe(200)
      expect(res.headers['x-service-version']).toBe(VERSION)
      const merged = res.json() as {
        openapi: string
        info: { version: string }
        paths: Record<string, unknown>
        components: Record<string, Record<string, unknown>>
      }
      expect(merged.openapi).toBe('3.1.0')
      expect(merged.info.version).toBe(VERSION)
      // The services' paths (not /internal), and the gateway's own: /health and the announced areas.
      expect(Object.keys(merged.paths).sort()).toEqual([
        '/appointments',
        '/audit/events',
        '/clinical/exams',
        '/comms/messages',
        '/consents',
        '/documents',
        '/events',
        '/health',
        '/patients',
        '/webhooks/endpoints',
      ])
      expect(merged.paths['/patients']).toMatchObject({ get: { operationId: 'listPatients' } })
      expect(Object.keys(merged.components.schemas!)).toEqual(
        expect.arrayContaining([
          'Appointment',
          'AuditEvent',
          'Patient',
          'Problem',
          'ValidationProblem',
          'WebhookEndpoint',
        ]),
      )
      expect(Object.keys(merged.components.securitySchemes!).sort()).toEqual(['basic', 'serviceToken'])
    }
    // Each service was asked with an assertion addressed to it, and served it.
    for (const u of Object.values(up)) {
      expect(u.openapiRefusals.length).toBeGreaterThan(0)
      expect(u.openapiRefusals.every((r) => r === '')).toBe(true)
    }
  })

  it('serves the same document to the interactive reference under /api/docs', async () => {
    const res = await gw.app.inject({ method: 'GET', url: '/api/docs/json' })
    expect(res.statusCode).toBe(200)
    expect(Object.keys((res.json() as { paths: object }).paths).sort()).toEqual([
      '/appointments',
      '/audit/events',
      '/clinical/exams',
      '/comms/messages',
      '/consents',
      '/documents',
      '/events',
      '/health',
      '/patients',
      '/webhooks/endpoints',
    ])
    const page = await gw.app.inject({ method: 'GET', url: '/api/docs' })
    expect([200, 302]).toContain(page.statusCode)
  })
})

describe("the gateway's own /metrics and /openapi.json", () => {
  it('answers them to internal addresses without a token, and 404 to anyone else', async () => {
    for (const url of ['/metrics', '/openapi.json']) {
      expect((await gw.app.inject({ method: 'GET', url })).statusCode).toBe(200)
      expect((await gw.app.inject({ method: 'GET', url, remoteAddress: '10.2.3.4' })).statusCode).toBe(200)
      const outside = await gw.app.inject({ method: 'GET', url, remoteAddress: '203.0.113.9' })
      expect(outside.statusCode).toBe(404)
      expect(outside.json()).toMatchObject({ code: 'not_found' })
    }
  })

  it('behind a trusted proxy, judges the client the proxy names, not the proxy', async () => {
    const proxied = await gateway({
      knex: env.knex,
      amqp: env.amqp,
      upstreams: upstreamsOf(up),
      trustProxy: 1,
    })
    try {
      const ask = (forwardedFor: string) =>
        proxied.app.inject({
          method: 'GET',
          url: '/metrics',
          remoteAddress: '10.0.0.5', // the Ingress controller
          headers: { 'x-forwarded-for': forwardedFor },
        })
      expect((await ask('203.0.113.9')).statusCode).toBe(404)
      // A client cannot pass for internal by writing the header itself: the proxy appends its peer.
      expect((await ask('10.9.9.9, 203.0.113.9')).statusCode).toBe(404)
      expect((await ask('10.9.9.9')).statusCode).toBe(200)
    } finally {
      await proxied.close()
    }
  })
})
