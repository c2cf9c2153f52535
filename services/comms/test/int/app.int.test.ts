import { Amqp, createDb, createLogger, migrate } from '@clinic/platform'
import { gatewayHeaders, testPrincipal } from '@clinic/platform/testing'
import { buildApp } from '../../src/app'
import { SCHEMA, migrations } from '../../src/db/migrations'

const logger = createLogger({ service: 'comms-test', level: 'silent' })
const knex = createDb(process.env.DATABASE_URL!, { schema: SCHEMA })
const amqp = new Amqp({ url: process.env.AMQP_URL!, log: logger, name: 'comms-test' })
let app: Awaited<ReturnType<typeof buildApp>>

beforeAll(async () => {
  await migrate(process.env.DATABASE_URL!, SCHEMA, migrations)
  await amqp.start()
  app = await buildApp({
    logger,
    knex,
    amqp,
    version: '261122.01',
    assertionSecret: process.env.INTERNAL_AUTH_SECRET!,
  })
})
afterAll(async () => {
  await app.close()
  await amqp.close()
  await knex.destroy()
})

describe('the comms service shell', () => {
  it('is ready when its database and broker are', async () => {
    const res = await app.inject({ method: 'GET', url: '/health/ready' })
    expect(res.statusCode).toBe(200)
    expect(res.json()).toEqual({ status: 'ok', checks: { database: 'ok', broker: 'ok' } })
  })

  it('refuses requests that did not come through the gateway', async () => {
    const res = await app.inject({ method: 'GET', url: '/comms', headers: { 'x-idempresa': '7' } })
    expect(res.statusCode).toBe(401)
    expect(res.json().code).toBe('unauthenticated')
    expect(res.headers['x-service-version']).toBe('261122.01')
  })

  it('answers not_found through the gateway until its routes land', async () => {
    const res = await app.inject({
      method: 'GET',
      url: '/comms',
      headers: gatewayHeaders(testPrincipal(), 'GET', '/comms'),
    })
    expect(res.statusCode).toBe(404)
    expect(res.json().code).toBe('not_found')
  })

  it('serves metrics and its OpenAPI document without the assertion', async () => {
    expect((await app.inject({ method: 'GET', url: '/metrics' })).body).toContain(
      'http_request_duration_seconds',
    )
    expect((await app.inject({ method: 'GET', url: '/openapi.json' })).json().openapi).toBe('3.1.0')
  })
})
