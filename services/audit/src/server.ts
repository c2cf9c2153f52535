import { runService } from '@clinic/platform'
import { buildApp } from './app'
import { loadAuditConfig } from './config'
import { ensurePartitions } from './db/repositories/audit-events'
import { SCHEMA, WRITER_ROLE } from './db/migrations'
import { startAuditConsumer } from './events/consumer'

const PARTITION_CHECK_MS = 6 * 60 * 60 * 1000

// The service role may only read and append (see db/migrations).
runService(
  {
    service: 'audit',
    schema: SCHEMA,
    role: WRITER_ROLE,
    outbox: false,
    config: loadAuditConfig,
    port: (c) => c.AUDIT_PORT,
  },
  async (deps, config) => {
    const { logger, knex, amqp } = deps
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

    const app = await buildApp(deps)
    const consumer = await startAuditConsumer({
      amqp,
      knex,
      log: logger,
      prefetch: config.AUDIT_PREFETCH,
      signingSecret: config.eventKeys,
      chainKey: config.AUDIT_CHAIN_KEY,
      metrics: app.metrics,
    })
    return { app, stops: [() => consumer.stop(), async () => clearInterval(timer)] }
  },
)
