import type { FastifyInstance } from 'fastify'

/** A request slower than this is logged as a warning whatever LOG_LEVEL says. */
const SLOW_REQUEST_MS = 1000

declare module 'fastify' {
  interface FastifyRequest {
    /** Words a plugin adds to the request's access line (why a token was refused, say). */
    accessNote?: Record<string, unknown>
  }
  interface FastifyContextConfig {
    /** A probe, polled every few seconds: its access line is at debug. */
    probe?: boolean
  }
}

/**
 * One access line per request, at info (warn when slow): method, route, status, ms and, for a
 * refused request, the problem's code; `request_id` comes with the request's logger. The path's
 * parameters and the query string stay out (a query can hold a patient's name); the route does not.
 * Probes (`config.probe`) log at debug.
 */
export function requestLog(app: FastifyInstance) {
  app.decorateRequest('accessNote', undefined)
  app.addHook('onResponse', (req, reply, done) => {
    const ms = reply.elapsedTime
    const level = ms >= SLOW_REQUEST_MS ? 'warn' : req.routeOptions.config?.probe ? 'debug' : 'info'
    req.log[level](
      {
        method: req.method,
        route: req.routeOptions.url ?? null,
        status: reply.statusCode,
        ms: Math.round(ms * 10) / 10,
        ...(reply.problemCode ? { code: reply.problemCode } : {}),
        ...req.accessNote,
      },
      ms >= SLOW_REQUEST_MS ? 'slow request' : 'request',
    )
    done()
  })
}
