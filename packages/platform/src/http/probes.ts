import type { FastifyBaseLogger, FastifyInstance } from 'fastify'

export interface ReadinessCheck {
  name: string
  check: () => Promise<unknown>
}

declare module 'fastify' {
  interface FastifyInstance {
    /** Readiness answers 503 and answers close their connections from now on (the drain). */
    beginClosing(): void
  }
}

const READINESS_TIMEOUT_MS = 2000
const hidden = { hide: true }

async function runChecks(log: FastifyBaseLogger, checks: ReadinessCheck[]) {
  const out: Record<string, string> = {}
  await Promise.all(
    checks.map(async ({ name, check }) => {
      try {
        await Promise.race([
          check(),
          new Promise((_, reject) =>
            setTimeout(() => reject(new Error('timeout')), READINESS_TIMEOUT_MS).unref(),
          ),
        ])
        out[name] = 'ok'
      } catch (err) {
        out[name] = 'down'
        log.warn({ check: name, err }, 'readiness check failed')
      }
    }),
  )
  return out
}

/**
 * `/health/live`, `/health/ready` (its dependencies; 503 once closing), and for the internal network
 * `/metrics` and `/openapi.json`. Once closing (from the start of the drain, see serve()), answers
 * close their keep-alive connection: otherwise a connection busy when close() began stays open
 * afterwards and holds the shutdown until the grace period.
 */
export function probes(app: FastifyInstance, readiness: ReadinessCheck[]) {
  let closing = false
  app.decorate('beginClosing', () => {
    closing = true
  })
  app.addHook('preClose', async () => {
    closing = true
  })
  app.addHook('onSend', (_req, reply, payload, done) => {
    if (closing) reply.header('connection', 'close')
    done(null, payload)
  })
  const probe = { config: { public: true, probe: true }, schema: hidden }
  app.get('/health/live', probe, async () => ({ status: 'ok' }))
  app.get('/health/ready', probe, async (req, reply) => {
    if (closing) return reply.code(503).send({ status: 'closing', checks: {} })
    const checks = await runChecks(req.log, readiness)
    const ok = Object.values(checks).every((s) => s === 'ok')
    return reply.code(ok ? 200 : 503).send({ status: ok ? 'ok' : 'unavailable', checks })
  })
  app.get('/metrics', { config: { internal: true }, schema: hidden }, async (_req, reply) =>
    reply.type(app.metrics.contentType).send(await app.metrics.metrics()),
  )
  app.get('/openapi.json', { config: { internal: true }, schema: hidden }, async () => app.swagger())
}
