import type { IncomingMessage } from 'node:http'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import {
  ATTR_HTTP_REQUEST_METHOD,
  ATTR_HTTP_RESPONSE_STATUS_CODE,
  ATTR_HTTP_ROUTE,
} from '@opentelemetry/semantic-conventions'
import { SpanKind, endSpan, startSpan, type Span } from '../tracing'

declare module 'fastify' {
  interface FastifyRequest {
    /**
     * The request's server span: a child of the `traceparent` it came with when that is valid (the
     * client's at the gateway, the gateway's or a caller's in a service), else the root of a new
     * trace. Its trace id is on every log line of the request (`trace_id`).
     */
    readonly span: Span
  }
}

const SERVER_SPAN = Symbol('server span')
type Traced = IncomingMessage & { [SERVER_SPAN]?: Span }

/**
 * The server span of a raw request, started on first ask: by the request's logger, which Fastify
 * makes before any hook runs (fastifyOptions' childLoggerFactory), so its start is the request's.
 * A malformed `traceparent` starts a new trace: a client's text never reaches a log line.
 */
export function serverSpanOf(raw: IncomingMessage): Span {
  const r = raw as Traced
  return (r[SERVER_SPAN] ??= startSpan(`${raw.method ?? 'HTTP'}`, {
    kind: SpanKind.SERVER,
    parent: raw.headers.traceparent
      ? { traceparent: raw.headers.traceparent, tracestate: raw.headers.tracestate }
      : undefined,
  }))
}

/** `req.span`, for every request of the app. */
export function serverSpans(app: FastifyInstance) {
  app.decorateRequest('span', {
    getter(this: FastifyRequest) {
      return serverSpanOf(this.raw)
    },
  })
}

/**
 * Ends the request's server span with its route and status (HTTP semantic conventions: the route,
 * never the path, which may hold a link's token; a 5xx is an error, with the problem's code).
 */
export function endServerSpan(req: FastifyRequest, reply: FastifyReply, route: string | null) {
  const span = (req.raw as Traced)[SERVER_SPAN]
  if (!span) return
  if (!span.isRecording()) return span.end()
  span.updateName(route ? `${req.method} ${route}` : req.method)
  span.setAttribute(ATTR_HTTP_REQUEST_METHOD, req.method)
  if (route) span.setAttribute(ATTR_HTTP_ROUTE, route)
  span.setAttribute(ATTR_HTTP_RESPONSE_STATUS_CODE, reply.statusCode)
  span.setAttribute('clinic.request_id', String(req.id))
  endSpan(span, reply.statusCode >= 500 ? { code: reply.problemCode ?? String(reply.statusCode) } : undefined)
}
