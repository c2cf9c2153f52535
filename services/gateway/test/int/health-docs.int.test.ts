import { FakeUpstream, VERSION, gateway, infra } from './harness'

const doc = (paths: Record<string, unknown>, schemas: Record<string, unknown>) => ({
  openapi: '3.1.0',
  info: { title: 'x', version: '1' },
  paths,
  components: { schemas },
})

let env: Awaited<ReturnType<typeof infra>>
let up: Record<'patients' | 'appointments' | 'comms' | 'audit', FakeUpstream>
let gw: Awaited<ReturnType<typeof gateway>>

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
    ).start(),
    appointments: await new FakeUpstream(
      'appointments',
      doc({ '/appointments': { post: { operationId: 'book' } } }, { Appointment: { type: 'object' } }),
    ).start(),
    comms: await new FakeUpstream(
      'comms',
      doc(
        { '/comms/messages': { get: { operationId: 'listMessages' } }, '/internal/send': { post: {} } },
        {},
      ),
    ).start(),
    audit: await new FakeUpstream(
      'audit',
      doc(
        { '/audit/events': { get: { operationId: 'listAuditEvents' } } },
        { AuditEvent: { type: 'object' } },
      ),
    ).start(),
  }
  gw = await gateway({
    knex: env.knex,
    amqp: env.amqp,
    upstreams: {
      patients: up.patients.url,
      appointments: up.appointments.url,
      comms: up.comms.url,
      audit: up.audit.url,
    },
  })
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
        },
      })
    }
  })

  it('is 503 naming the service that is not ready', async () => {
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
      },
    })
    up.comms.ready = true
    expect((await gw.app.inject({ method: 'GET', url: '/api/health' })).statusCode).toBe(200)
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
      expect(Object.keys(merged.paths).sort()).toEqual([
        '/appointments',
        '/audit/events',
        '/comms/messages',
        '/patients',
      ])
      expect(merged.paths['/patients']).toEqual({ get: { operationId: 'listPatients' } })
      expect(Object.keys(merged.components.schemas!).sort()).toEqual(['Appointment', 'AuditEvent', 'Patient'])
      expect(Object.keys(merged.components.securitySchemes!).sort()).toEqual(['basic', 'serviceToken'])
    }
  })

  it('serves the same document to the interactive reference under /api/docs', async () => {
    const res = await gw.app.inject({ method: 'GET', url: '/api/docs/json' })
    expect(res.statusCode).toBe(200)
    expect(Object.keys((res.json() as { paths: object }).paths).sort()).toEqual([
      '/appointments',
      '/audit/events',
      '/comms/messages',
      '/patients',
    ])
    const page = await gw.app.inject({ method: 'GET', url: '/api/docs' })
    expect([200, 302]).toContain(page.statusCode)
  })
})
