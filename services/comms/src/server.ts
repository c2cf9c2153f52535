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
import { loadCommsConfig } from './config'
import { SCHEMA } from './db/migrations'

async function main() {
  const config = loadCommsConfig()
  const logger = createLogger({ service: 'comms', level: config.LOG_LEVEL })
  const knex = createDb(config.DATABASE_URL, { schema: SCHEMA, log: logger })
  const amqp = new Amqp({
    url: config.AMQP_URL,
    log: logger,
    name: 'comms',
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
  await app.listen({ port: config.COMMS_PORT, host: config.HOST })
  onShutdown(logger, [() => app.close(), () => relay.stop(), () => amqp.close(), () => knex.destroy()])
}

main().catch((err) => {
  exitOnConfigError(err)
  process.stderr.write(`comms failed to start: ${(err as Error).stack}\n`)
  process.exit(1)
})
