import type {
  FastifyBaseLogger,
  FastifyError,
  FastifyReply,
  FastifyRequest,
  FastifyServerOptions,
  RawRequestDefaultExpression,
} from 'fastify'
import { LogController } from 'fastify'
import type { Bindings, ChildLoggerOptions, Logger } from 'pino'
import { HeadersTooLarge, NotFound, PROBLEM_CONTENT_TYPE, ValidationFailed, problemBody } from '../errors'
import { lazyChild, requestIdFrom } from '../logging'
import { BODY_LIMIT, VERSION_HEADER } from './limits'
import { sendProblem } from './problems'
import { serverSpanOf } from './server-span'

/** What Node's parser refused (headers over 16 KiB, broken HTTP), written straight to the socket. */
function clientErrorHandler(version: string) {
  return (err: NodeJS.ErrnoException, socket: import('node:net').Socket) => {
    if (!socket.writable || err.code === 'ECONNRESET') return void socket.destroy()
    const tooLarge = err.code === 'HPE_HEADER_OVERFLOW'
    const appErr = tooLarge
      ? new HeadersTooLarge()
      : new ValidationFailed([{ path: '/', message: 'is not valid HTTP' }], 'The request is not valid HTTP')
    const body = JSON.stringify(problemBody(appErr, 'none'))
    socket.end(
      `HTTP/1.1 ${appErr.status} ${tooLarge ? 'Request Header Fields Too Large' : 'Bad Request'}\r\n` +
        `Content-Type: ${PROBLEM_CONTENT_TYPE}\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
        `${version ? `${VERSION_HEADER}: ${version}\r\n` : ''}Connection: close\r\n\r\n${body}`,
    )
  }
}

/**
 * Fastify constructor options every service (and the gateway) shares. URLs the router cannot take
 * (bad percent-encoding, a path parameter over 100 characters) and requests Node's parser refuses
 * are answered as problem+json too, with the version header.
 */
export function fastifyOptions(logger: Logger, version = '') {
  return {
    frameworkErrors: (err: FastifyError, _req: FastifyRequest, reply: FastifyReply) => {
      if (version) reply.header(VERSION_HEADER, version)
      void sendProblem(
        reply,
        err.code === 'FST_ERR_MAX_PARAM_LENGTH'
          ? new NotFound('No such resource')
          : new ValidationFailed([{ path: '/', message: 'is not a valid URL' }], 'The URL is not valid'),
      )
    },
    clientErrorHandler: clientErrorHandler(version),
    loggerInstance: logger,
    // The request's logger (with request_id, and the trace_id of its server span, started here: the
    // first thing Fastify does with a request) is made when the request first writes a line.
    childLoggerFactory: (
      parent: FastifyBaseLogger,
      bindings: Bindings,
      opts: ChildLoggerOptions,
      raw: RawRequestDefaultExpression,
    ) => {
      bindings.trace_id = serverSpanOf(raw).spanContext().traceId
      return opts.level ? parent.child(bindings, opts) : lazyChild(parent as Logger, bindings)
    },
    genReqId: requestIdFrom,
    logController: new LogController({
      requestIdLogLabel: 'request_id',
      // Fastify's own two lines per request (in and out) stay off: the platform writes one access
      // line per request (request-log.ts).
      disableRequestLogging: true,
    }),
    bodyLimit: BODY_LIMIT,
    return503OnClosing: true,
    routerOptions: { ignoreTrailingSlash: true },
  } satisfies FastifyServerOptions & { loggerInstance: Logger }
}
