import { Amqp, createDb, createLogger, migrate, type Migration, type ServiceDeps } from '@clinic/platform'
import { gatewayHeaders, testAssertionKeys, testPrincipal } from '@clinic/platform/testing'

/** The part of a Fastify instance the contract uses (fastify is not a root dependency). */
interface App {
  inject(o: { method: 'GET'; url: string; headers?: Record<string, string> }): Promise<{
    statusCode: number
    body: string
    headers: Record<string, unknown>
    json(): any // eslint-disable-line @typescript-eslint/no-explicit-any
  }>
  close(): PromiseLike<unknown>
}

/**
 * What every service owes the platform, whatever its resources: readiness of its database and
 * broker, 401 without the gateway assertion (even on its own port), the version header,
 * not_found for unknown routes, Prometheus metrics and its generated OpenAPI document.
 */
export function describeServiceContract(o: {
  service: string
  schema: string
  migrations: Migration[]
  buildApp: (deps: ServiceDeps) => Promise<App>
  /** A route of the service that needs the assertion. */
  protectedPath: string
}) {
  describe(`${o.service}: the service contract`, () => {
    const logger = createLogger({ service: `${o.service}-test`, level: 'silent' })
    const knex = createDb(process.env.DATABASE_URL!, { schema: o.schema })
    const amqp = new Amqp({ url: process.env.AMQP_URL!, log: logger, name: `${o.service}-test` })
    const version = '261122.01'
    let app: App

    beforeAll(async () => {
      await migrate(process.env.DATABASE_URL!, o.schema, o.migrations)
      await amqp.start()
      app = await o.buildApp({
        logger,
        knex,
        amqp,
        version,
        assertionKeys: testAssertionKeys(),
        serviceSigner: null,
      })
    })
    afterAll(async () => {
      await app?.close()
      await amqp.close()
      await knex.destroy()
    })

    it('is ready when its database and broker are', async () => {
      const res = await app.inject({ method: 'GET', url: '/health/ready' })
      expect(res.statusCode).toBe(200)
      expect(res.json()).toEqual({ status: 'ok', checks: { database: 'ok', broker: 'ok' } })
      expect((await app.inject({ method: 'GET', url: '/health/live' })).statusCode).toBe(200)
    })

    it('refuses requests that did not come through the gateway', async () => {
      const res = await app.inject({ method: 'GET', url: o.protectedPath, headers: { 'x-idempresa': '7' } })
      expect(res.statusCode).toBe(401)
      expect(res.json().code).toBe('unauthenticated')
      expect(res.headers['x-service-version']).toBe(version)
    })

    it('answers not_found for an unknown route', async () => {
      const url = `/${o.service}-nothing-here`
      const res = await app.inject({
        method: 'GET',
        url,
        headers: await gatewayHeaders(
          testPrincipal(),
          'GET',
          url,
          undefined,
          undefined,
          undefined,
          o.service,
        ),
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

    it('counts the SQL statements it sends in db_statements_total', async () => {
      const count = async () => {
        const body = (await app.inject({ method: 'GET', url: '/metrics' })).body
        return Number(/^db_statements_total(?:\{[^}]*\})? (\d+)/m.exec(body)?.[1])
      }
      const before = await count()
      expect((await app.inject({ method: 'GET', url: '/health/ready' })).statusCode).toBe(200)
      expect(await count()).toBe(before + 1) // its `select 1`
    })
  })
}
