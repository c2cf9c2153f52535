import {
  Amqp,
  OutboxRelay,
  createDb,
  createLogger,
  exitOnConfigError,
  onShutdown,
  readVersion,
} from '@clinic/platform'
import { buildApp } from './app'
import { loadPatientsConfig } from './config'
import { APP_ROLE, SCHEMA } from './db/migrations'

async function main() {
  const config = loadPatientsConfig()
  const logger = createLogger({ service: 'patients', level: config.LOG_LEVEL })
  // Requests run as the service role, under row-level security; migrations ran as the owner.
  const knex = createDb(config.DATABASE_URL, { schema: SCHEMA, role: APP_ROLE, log: logger })
  const amqp = new Amqp({
    url: config.AMQP_URL,
    log: logger,
    name: 'patients',
    queueType: config.AMQP_QUEUE_TYPE as 'classic',
  })
  void amqp.start()
  const relay = new OutboxRelay({ knex, schema: SCHEMA, databaseUrl: config.DATABASE_URL, amqp, log: logger })
  await relay.start()
  const app = await buildApp({
    logger,
    knex,
    amqp,
    version: readVersion(),
    assertionSecret: config.INTERNAL_AUTH_SECRET,
  })
  await app.listen({ port: config.PATIENTS_PORT, host: config.HOST })
  onShutdown(logger, [() => app.close(), () => relay.stop(), () => amqp.close(), () => knex.destroy()])
}

main().catch((err) => {
  exitOnConfigError(err)
  process.stderr.write(`patients failed to start: ${(err as Error).stack}\n`)
  process.exit(1)
})
