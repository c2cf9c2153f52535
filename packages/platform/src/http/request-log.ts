import type { FastifyInstance, FastifyRequest } from 'fastify'
import { routeConfig } from './route-config'
import { endServerSpan } from './server-span'

/** A request slower than this is logged as a warning whatever LOG_LEVEL says. */
const SLOW_REQUEST_MS = 1000

declare module 'fastify' {
  interface FastifyRequest {
    /** Words a plugin adds to the request's access line (why a token was refused, say). */
    accessNote?: Record<string, unknown>
    /** When it arrived, on the access log's clock (ms). */
    arrivedAt: number
    /** When its answer was ready to send (onSend), on the same clock; 0 before. */
    answeredAt: number
  }
  interface FastifyContextConfig {
    /** A probe, polled every few seconds: its access line is at debug. */
    probe?: boolean
    /**
     * A long poll: the query parameter (seconds) by which a client asks the route to hold its answer
     * until there is news. The time it was asked to wait is not slowness; only what comes on top is.
     */
    longPoll?: string
  }
}

/** How long the request asked its route to wait on purpose (a long poll's parameter), in ms. */
function waitAsked(req: FastifyRequest): number {
  const param = routeConfig(req).longPoll
  if (!param) return 0
  const value = (req.query as Record<string, unknown> | undefined)?.[param]
  const seconds = Number(typeof value === 'string' || typeof value === 'number' ? value : NaN)
  return Number.isFinite(seconds) && seconds > 0 ? seconds * 1000 : 0
}

/**
 * One access line per request (and the end of its server span), at info (warn when slow): method, route, status, ms and, for a
 * refused request, the problem's code; `request_id` comes with the request's logger. The path's
 * parameters and the query string stay out (a query can hold a patient's name); the route does not.
 * Probes (`config.probe`) log at debug; a long poll (`config.longPoll`) is slow only past its wait.
 * Slow is the server's time to its answer: a streamed body (a file download) that the client takes
 * long to read is not slow; its line has `answer_ms` beside the whole `ms`.
 * `clock` (monotonic ms, `performance.now` unless a test moves its own) times the request.
 */
export function requestLog(app: FastifyInstance, clock: () => number = () => performance.now()) {
  app.decorateRequest('accessNote', undefined)
  app.decorateRequest('arrivedAt', 0)
  app.decorateRequest('answeredAt', 0)
  app.addHook('onRequest', (req, _reply, done) => {
    req.arrivedAt = clock()
    done()
  })
  app.addHook('onSend', (req, _reply, payload, done) => {
    req.answeredAt = clock()
    done(null, payload)
  })
  app.addHook('onResponse', (req, reply, done) => {
    const now = clock()
    const ms = now - req.arrivedAt
    const answerMs = (req.answeredAt || now) - req.arrivedAt
    const slow = answerMs >= SLOW_REQUEST_MS + waitAsked(req)
    const config = routeConfig(req)
    const level = slow ? 'warn' : config.probe ? 'debug' : 'info'
    req.log[level](
      {
        method: req.method,
        route: config.url ?? null,
        status: reply.statusCode,
        ms: Math.round(ms * 10) / 10,
        ...(ms - answerMs >= 1 ? { answer_ms: Math.round(answerMs * 10) / 10 } : {}),
        ...(reply.problemCode ? { code: reply.problemCode } : {}),
        ...req.accessNote,
      },
      slow ? 'slow request' : 'request',
    )
    endServerSpan(req, reply, config.url ?? null)
    done()
  })
}
