import type { Logger } from 'pino'
import type { Principal } from './principal'
import type { CloudEvent } from './events'

/** What domain code gets instead of globals: who asks, where to log, which request and trace. */
export interface Ctx {
  auth: Principal
  log: Logger
  requestId: string
  /**
   * The W3C trace context of the span this work runs in (the request's server span, a consumer's
   * handling of an event, a job's run): what the events it emits, the jobs it leaves and the
   * services it calls are children of. Unset only in code that runs outside any (a CLI, a test).
   */
  traceparent?: string
  tracestate?: string
}

/**
 * The `Ctx` of a consumed event, as a route has one: the company and the actor from the event's
 * extensions (`idempresa`, `actorid`, `actorname`, `actortokenid`), the request that caused it
 * (`requestid`) and a child logger that names it. An event's actor acts for the company, not for
 * a center list: `allowedCenters` is null and `companyCenters` holds the event's center, if any.
 * A missing actor field is '' here, and `causeOf` leaves it out again. `trace`: the span that
 * handles it (the consumer's), else the event's own trace context.
 */
export function ctxFromEvent(event: CloudEvent, log: Logger, trace?: Trace): Ctx {
  const cause = trace ? { ...event, ...trace } : event
  return ctxOfCause(
    { companyId: event.idempresa, codalmacen: event.codalmacen, cause },
    log.child({ request_id: event.requestid, event_id: event.id }),
  )
}

/**
 * The `Ctx` of work done later for who caused it (`causeOf` of the request, kept with a job or
 * carried by an event): the company, the center of the work if any, the actor and the request.
 */
export function ctxOfCause(
  o: { companyId: number; codalmacen?: string | null; cause: Cause },
  log: Logger,
): Ctx {
  return {
    auth: {
      companyId: o.companyId,
      userId: o.cause.actorid ?? '',
      username: o.cause.actorname ?? '',
      tokenId: o.cause.actortokenid ?? '',
      companyCenters: o.codalmacen ? [o.codalmacen] : [],
      allowedCenters: null,
    },
    log,
    requestId: o.cause.requestid ?? '',
    ...traceOfCause(o.cause),
  }
}

/** The W3C trace context of work (CloudEvents Distributed Tracing extension attributes). */
export type Trace = Pick<CloudEvent, 'traceparent' | 'tracestate'>

/**
 * Who caused work: the actor, the request and the span it was caused in (CloudEvent extensions).
 * Kept with a job (a message row's `cause`) and restored when it runs.
 */
export type Cause = Pick<
  CloudEvent,
  'actorid' | 'actorname' | 'actortokenid' | 'requestid' | 'traceparent' | 'tracestate'
>

/** The trace fields of a cause or a ctx that has them. */
export function traceOfCause(c: Trace): Trace {
  const t: Trace = {}
  if (c.traceparent) t.traceparent = c.traceparent
  if (c.tracestate) t.tracestate = c.tracestate
  return t
}

/** Who caused a `Ctx`'s work, for an event it emits: the fields it knows (none of them ''). */
export function causeOf(ctx: Pick<Ctx, 'auth' | 'requestId' | 'traceparent' | 'tracestate'>): Cause {
  const cause: Cause = traceOfCause(ctx)
  if (ctx.auth.userId) cause.actorid = ctx.auth.userId
  if (ctx.auth.username) cause.actorname = ctx.auth.username
  if (ctx.auth.tokenId) cause.actortokenid = ctx.auth.tokenId
  if (ctx.requestId) cause.requestid = ctx.requestId
  return cause
}
