import type { Logger } from 'pino'
import type { Principal } from './assertion'
import type { CloudEvent } from './events'

/** What domain code gets instead of globals: who asks, where to log, which request. */
export interface Ctx {
  auth: Principal
  log: Logger
  requestId: string
}

/**
 * The `Ctx` of a consumed event, as a route has one: the company and the actor from the event's
 * extensions (`idempresa`, `actorid`, `actorname`, `actortokenid`), the request that caused it
 * (`requestid`) and a child logger that names it. An event's actor acts for the company, not for
 * a center list: `allowedCenters` is null and `companyCenters` holds the event's center, if any.
 * A missing actor field is '' here, and `causeOf` leaves it out again.
 */
export function ctxFromEvent(event: CloudEvent, log: Logger): Ctx {
  return ctxOfCause(
    { companyId: event.idempresa, codalmacen: event.codalmacen, cause: event },
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
  }
}

/** Who caused work: the actor and the request (CloudEvent extensions). */
export type Cause = Pick<CloudEvent, 'actorid' | 'actorname' | 'actortokenid' | 'requestid'>

/** Who caused a `Ctx`'s work, for an event it emits: the fields it knows (none of them ''). */
export function causeOf(ctx: Pick<Ctx, 'auth' | 'requestId'>): Cause {
  const cause: Cause = {}
  if (ctx.auth.userId) cause.actorid = ctx.auth.userId
  if (ctx.auth.username) cause.actorname = ctx.auth.username
  if (ctx.auth.tokenId) cause.actortokenid = ctx.auth.tokenId
  if (ctx.requestId) cause.requestid = ctx.requestId
  return cause
}
