import { runService } from '@clinic/platform'
import { buildApp } from './app'
import { startCheckpoints } from './checkpoints/checkpointer'
import { loadAuditConfig } from './config'
import { auditTrailRepository, ensurePartitions } from './db/repositories/audit-events-repository'
import { chainHeadsRepository } from './db/repositories/chain-heads-repository'
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

    // Signed heads outside the database, so a tail the owner cuts shows in audit:verify: written
    // once before events are taken (a file that cannot be written stops the start), then
    // periodically, and last after the consumer stopped, with everything this instance recorded.
    const checkpoints = await startCheckpoints({
      heads: chainHeadsRepository(knex),
      log: logger,
      file: config.AUDIT_CHECKPOINT_FILE,
      intervalMs: config.AUDIT_CHECKPOINT_INTERVAL_SECONDS * 1000,
      chainKey: config.AUDIT_CHAIN_KEY,
    })

    const app = await buildApp(deps)
    const consumer = await startAuditConsumer({
      amqp,
      knex,
      log: logger,
      prefetch: config.AUDIT_PREFETCH,
      origins: config.origins,
      trail: auditTrailRepository(config.AUDIT_CHAIN_KEY),
      metrics: app.metrics,
    })
    return {
      app,
      stops: [() => consumer.stop(), async () => clearInterval(timer), () => checkpoints.stop()],
    }
  },
)
