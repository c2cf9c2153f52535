import { Amqp, createDb, createLogger, migrate } from '@clinic/platform'
import { testAssertionKeys, testServices } from '@clinic/platform/testing'
import { buildApp } from '../../src/app'
import { APP_ROLE, SCHEMA, migrations } from '../../src/db/migrations'

// The run's database and vhost (jest global setup); the schema migrates on first use.
it('migrates, and answers /health/live and /health/ready as the service role', async () => {
  const url = process.env.DATABASE_URL!
  await migrate(url, SCHEMA, migrations)
  const logger = createLogger({ service: 'clinical', level: process.env.LOG_LEVEL ?? 'silent' })
  const knex = createDb(url, { schema: SCHEMA, role: APP_ROLE, poolMax: 2 })
  const amqp = new Amqp({ url: process.env.AMQP_URL!, log: logger, name: 'clinical-test' })
  await amqp.start()
  const app = await buildApp({
    logger,
    knex,
    amqp,
    version: '261122.01',
    assertionKeys: testAssertionKeys([]),
    serviceSigner: null,
    // Health asks neither service: clients to an address where nothing listens.
    services: testServices('clinical', 'http://127.0.0.1:9', 100),
  })
  try {
    expect((await app.inject({ url: '/health/live' })).statusCode).toBe(200)
    expect((await app.inject({ url: '/health/ready' })).statusCode).toBe(200)
  } finally {
    await app.close()
    await amqp.close()
    await knex.destroy()
  }
})
