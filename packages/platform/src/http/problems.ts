import type { FastifyError, FastifyInstance, FastifyReply } from 'fastify'
import {
  AppError,
  InternalError,
  NotFound,
  PROBLEM_CONTENT_TYPE,
  PayloadTooLarge,
  UnsupportedMediaType,
  UpstreamUnavailable,
  ValidationFailed,
  isConnectionError,
  isTransactionConflict,
  problemBody,
  type FieldError,
} from '../errors'
import { FHIR_CONTENT_TYPE } from '../fhir/definitions'
import { isFhirPath, operationOutcome } from '../fhir/outcome'
import { BODY_LIMIT } from './limits'

export interface AjvError {
  instancePath: string
  keyword: string
  params: Record<string, unknown>
  message?: string
}

const FORMAT_NAMES: Record<string, string> = {
  date: 'date (YYYY-MM-DD)',
  'date-time': 'RFC 3339 date-time',
  email: 'email address',
  uuid: 'UUID',
}

/** Ajv errors -> [{path, message}] with JSON pointers and plain messages. */
export function fieldErrors(validation: AjvError[]): FieldError[] {
  const out: FieldError[] = []
  for (const e of validation) {
    const base = e.instancePath
    if (e.keyword === 'required')
      out.push({ path: `${base}/${String(e.params.missingProperty)}`, message: 'is required' })
    else if (e.keyword === 'additionalProperties')
      out.push({ path: `${base}/${String(e.params.additionalProperty)}`, message: 'is not an allowed field' })
    else if (e.keyword === 'format') {
      const format = String(e.params.format)
      out.push({ path: base, message: `must be a valid ${FORMAT_NAMES[format] ?? format}` })
    } else if (e.keyword === 'enum')
      out.push({ path: base, message: `must be one of: ${(e.params.allowedValues as unknown[]).join(', ')}` })
    else if (e.keyword === 'anyOf' || e.keyword === 'oneOf')
      continue // the branch errors say more
    else out.push({ path: base, message: e.message ?? 'is not valid' })
  }
  // Ajv repeats an error per failed union branch; keep one per path and message.
  return out.filter((e, i) => out.findIndex((o) => o.path === e.path && o.message === e.message) === i)
}

/** Maps any thrown error onto an AppError with a stable code. */
export function toAppError(err: FastifyError | Error): AppError {
  if (err instanceof AppError) return err
  if (isConnectionError(err)) return new UpstreamUnavailable('The database is temporarily unavailable', 2)
  if (isTransactionConflict(err))
    return new UpstreamUnavailable('The request collided with a concurrent one; nothing was written', 1)
  const fe = err as FastifyError & { validationContext?: string }
  if (fe.validation)
    return new ValidationFailed(
      fieldErrors(fe.validation as unknown as AjvError[]),
      `The ${fe.validationContext === 'querystring' ? 'query string' : (fe.validationContext ?? 'request')} is not valid`,
    )
  switch (fe.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new PayloadTooLarge(BODY_LIMIT)
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new UnsupportedMediaType()
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new ValidationFailed(
        [{ path: '', message: 'body must be valid JSON' }],
        'The body is not valid JSON',
      )
  }
  if (fe.statusCode === 404) return new NotFound()
  if (fe.statusCode && fe.statusCode >= 400 && fe.statusCode < 500)
    return new ValidationFailed([], 'The request is not valid')
  return new InternalError()
}

export function sendProblem(reply: FastifyReply, err: AppError) {
  if (err.headers) reply.headers(err.headers)
  reply.problemCode = err.code
  // On a FHIR path an OperationOutcome, as FHIR clients read errors (DESIGN.md section 19).
  if (isFhirPath(reply.request.url))
    return reply
      .code(err.status)
      .type(FHIR_CONTENT_TYPE)
      .send(operationOutcome(err, String(reply.request.id)))
  return reply
    .code(err.status)
    .type(PROBLEM_CONTENT_TYPE)
    .send(problemBody(err, String(reply.request.id)))
}

/**
 * Every error as problem+json. What is logged: a 500 as an error with its stack, a 503 (a
 * dependency away) as a warning with its message; anything else a client asked for (4xx, the 501
 * of an announced area) only in the request's access line, by its code.
 */
export function problemHandlers(app: FastifyInstance) {
  app.decorateReply('problemCode', undefined)
  app.setErrorHandler((err: FastifyError, req, reply) => {
    const appErr = toAppError(err)
    // A client that hung up mid-request (a load generator stopping, a closed tab) is not our error.
    // (`req.raw.destroyed` is no sign of it: it is true once a body has been read.)
    if (appErr.status === 500 && req.socket?.destroyed)
      req.log.info({ code: (err as { code?: string }).code }, 'client closed the connection')
    else if (appErr.status === 500) req.log.error({ err }, 'request failed')
    else if (appErr.status === 503) req.log.warn({ err: err.message, code: appErr.code }, 'request failed')
    return sendProblem(reply, appErr)
  })
  app.setNotFoundHandler((_req, reply) => sendProblem(reply, new NotFound('No such route')))
}

declare module 'fastify' {
  interface FastifyReply {
    /** The `code` of the problem this reply answered, for the access line. */
    problemCode?: string
  }
}
