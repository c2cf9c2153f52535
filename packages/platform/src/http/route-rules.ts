import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { ValidationFailed, type AppError, type FieldError } from '../errors'
import { COMMON_PATTERN_MESSAGES } from '../schemas'
import { fieldErrors, toAppError, type AjvError } from './problems'
import { routeConfig } from './route-config'

declare module 'fastify' {
  interface FastifyContextConfig {
    /** What a route checks of its request beyond its schema (routeRules runs it). */
    rules?: RequestErrorOptions
  }
}

export interface RequestErrorOptions {
  /** Rules the schema cannot express, run on the body even when the schema failed. */
  extra?: (body: unknown) => FieldError[]
  /** Plain words for the schema's patterns (a regex is no message for a person), by pattern. */
  patternMessages?: Record<string, string>
  /** Fields a client can never write: named as read-only rather than as unknown. */
  readOnlyFields?: readonly string[]
  /** Fields a body may not carry, by path (`/status`), with the reason to give instead of "is not an allowed field". */
  refusedFields?: Record<string, string>
}

/** Ajv's pattern errors in plain words: the route's `patternMessages`, else the platform's. */
function withPatternMessages(errors: AjvError[], own: Record<string, string> | undefined): AjvError[] {
  const messages = { ...COMMON_PATTERN_MESSAGES, ...own }
  return errors.map((e) =>
    e.keyword === 'pattern' ? { ...e, message: messages[String(e.params.pattern)] ?? e.message } : e,
  )
}

/**
 * The schema's errors and the rules it cannot express, in one 400 listing every bad field once.
 * Returns null when the request is valid. Query and params errors map as the platform error
 * handler maps them, with the same pattern messages.
 */
export function requestError(req: FastifyRequest, o: RequestErrorOptions = {}): AppError | null {
  const err = req.validationError as
    (Error & { validation?: AjvError[]; validationContext?: string }) | undefined
  const extra = o.extra ? o.extra(req.body) : []
  if (!err) return extra.length ? new ValidationFailed(extra, 'The body is not valid') : null
  if (!err.validation) return toAppError(err)
  if (err.validationContext !== 'body')
    return toAppError(
      Object.assign(err, { validation: withPatternMessages(err.validation, o.patternMessages) }),
    )
  const ajv = withPatternMessages(err.validation, o.patternMessages).map((e) => {
    if (e.keyword === 'enum')
      return {
        ...e,
        params: {
          ...e.params,
          allowedValues: (e.params.allowedValues as unknown[]).map((v) => (v === null ? 'null' : v)),
        },
      }
    if (e.keyword === 'minLength' && e.params.limit === 1) return { ...e, message: 'must not be empty' }
    return e
  })
  const refused: Record<string, string> = {
    ...Object.fromEntries((o.readOnlyFields ?? []).map((f) => [`/${f}`, 'is read-only'])),
    ...o.refusedFields,
  }
  const errors = [...fieldErrors(ajv), ...extra]
    .map((e) =>
      e.message === 'is not an allowed field' && refused[e.path] ? { ...e, message: refused[e.path]! } : e,
    )
    // One message per field (an empty name breaks both minLength and a not-blank pattern).
    .filter((e, i, all) => all.findIndex((other) => other.path === e.path) === i)
  const onlyReadOnly = errors.every((e) => e.message === 'is read-only')
  return new ValidationFailed(
    errors,
    onlyReadOnly ? 'Read-only fields cannot be changed' : 'The body is not valid',
  )
}

/**
 * Every route validates the same way: its schema (attached, not thrown) and its `config.rules`
 * are checked together before the handler runs, so a 400 names every bad field at once. Routes
 * state their rules; they never call this themselves.
 */
export function routeRules(app: FastifyInstance) {
  // A callback hook: nothing is awaited, and an async hook costs a promise per request.
  const check = (req: FastifyRequest, _reply: FastifyReply, done: (err?: Error) => void) =>
    done(requestError(req, routeConfig(req).rules) ?? undefined)
  app.addHook('onRoute', (route) => {
    route.attachValidation = true
    const own = route.preHandler
    route.preHandler = own ? [check, ...(Array.isArray(own) ? own : [own])] : check
  })
}
