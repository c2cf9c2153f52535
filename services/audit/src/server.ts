import { connectService, onShutdown, readVersion, runMain } from '@clinic/platform'
import { buildApp } from './app'
import { loadAuditConfig } from './config'
import { ensurePartitions } from './db/repositories/audit-events'
import { SCHEMA, WRITER_ROLE } from './db/migrations'
import { startAuditConsumer } from './events/consumer'

const PARTITION_CHECK_MS = 6 * 60 * 60 * 1000

runMain('audit', async () => {
  const config = loadAuditConfig()
  // The service role may only read and append (see db/migrations).
  const infra = await connectService({
    service: 'audit',
    schema: SCHEMA,
    role: WRITER_ROLE,
    config,
    outbox: false,
  })
  const { logger, knex, amqp } = infra

  // This month's and next month's partitions exist before any event needs them; checked again
  // periodically so a long-running instance crosses month ends without landing in the default.
  const partitions = async () => {
    const created = await ensurePartitions(knex, 1)
    if (created) logger.info({ created }, 'audit partitions created')
  }
  await partitions()
  const timer = setInterval(() => {
    partitions().catch((err) => logger.error({ err }, 'creating audit partitions failed'))
  }, PARTITION_CHECK_MS)
  timer.unref()

  const consumer = await startAuditConsumer({ amqp, knex, log: logger, prefetch: config.AUDIT_PREFETCH })
  const app = await buildApp({
    ...infra,
    version: readVersion(),
    assertionSecret: config.INTERNAL_AUTH_SECRET,
  })
  await app.listen({ port: config.AUDIT_PORT, host: config.HOST })
  onShutdown(logger, [
    () => consumer.stop(),
    () => app.close(),
    async () => clearInterval(timer),
    () => infra.close(),
  ])
})
