import { createServer } from 'node:http'
import type { FastifyInstance } from 'fastify'
import type { Logger } from 'pino'
import type { Registry } from 'prom-client'

/**
 * METRICS_PORT: a listener of its own that answers `GET /metrics` and nothing else, so a network
 * policy can let the monitoring namespace reach the metrics without reaching the API port.
 */
export async function serveMetrics(metrics: Registry, port: number, host: string) {
  const server = createServer((req, res) => {
    if (req.method !== 'GET' || (req.url ?? '').split('?')[0] !== '/metrics') {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found\n')
      return
    }
    metrics.metrics().then(
      (text) => res.writeHead(200, { 'content-type': metrics.contentType }).end(text),
      () => res.writeHead(500).end(),
    )
  })
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(port, host, () => resolve())
  })
  return {
    port: (server.address() as { port: number }).port,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  }
}

/**
 * Listens, then on SIGTERM/SIGINT shuts down in order: readiness turns 503 at once while requests
 * are still served for `drainMs` (load balancers take the instance out; connections already open
 * get their requests answered, each with `Connection: close`), then the server closes and waits for
 * the requests in flight, then `stops` run (consumers, workers) and the connections close.
 */
export async function serve(
  app: Pick<FastifyInstance, 'listen' | 'close' | 'beginClosing' | 'metrics'>,
  o: {
    port: number
    config: { HOST: string; SHUTDOWN_DRAIN_MS: number; SHUTDOWN_GRACE_MS: number; METRICS_PORT?: number }
    infra: { logger: Logger; close(): Promise<void> }
    stops?: Array<() => Promise<unknown>>
  },
): Promise<void> {
  await app.listen({ port: o.port, host: o.config.HOST })
  const metrics =
    o.config.METRICS_PORT === undefined
      ? null
      : await serveMetrics(app.metrics, o.config.METRICS_PORT, o.config.HOST)
  const drain = async () => {
    app.beginClosing()
    await new Promise((r) => setTimeout(r, o.config.SHUTDOWN_DRAIN_MS))
  }
  onShutdown(
    o.infra.logger,
    [drain, () => app.close(), async () => metrics?.close(), ...(o.stops ?? []), () => o.infra.close()],
    o.config.SHUTDOWN_GRACE_MS,
  )
}

/**
 * SIGTERM/SIGINT: run `steps` in order, then exit 0. The same signal a second time forces the
 * exit, and so does the end of the grace period (SHUTDOWN_GRACE_MS, default 25 s: inside
 * Compose's 30 s and Kubernetes' 45 s).
 */
export function onShutdown(log: Logger, steps: Array<() => Promise<unknown>>, graceMs = 25_000) {
  let closing: string | null = null
  const stop = async (signal: string) => {
    // Ctrl-C under `npm start` delivers SIGINT from the terminal and SIGTERM from the runner: one
    // shutdown. The same signal twice means "now".
    if (closing === signal) {
      log.warn({ signal }, 'second signal: exiting without draining')
      process.exit(1)
    }
    if (closing) return
    closing = signal
    log.info({ signal, grace_ms: graceMs }, 'shutting down')
    setTimeout(() => {
      log.error({ grace_ms: graceMs }, 'grace period over: exiting with work unfinished')
      process.exit(1)
    }, graceMs).unref()
    for (const step of steps) {
      try {
        await step()
      } catch (err) {
        log.error({ err }, 'shutdown step failed')
      }
    }
    log.info('stopped')
    process.exit(0)
  }
  process.on('SIGTERM', () => void stop('SIGTERM'))
  process.on('SIGINT', () => void stop('SIGINT'))
}
