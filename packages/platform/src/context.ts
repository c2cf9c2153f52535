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
  const requestId = event.requestid ?? ''
  return {
    auth: {
      companyId: event.idempresa,
      userId: event.actorid ?? '',
      username: event.actorname ?? '',
      tokenId: event.actortokenid ?? '',
      companyCenters: event.codalmacen ? [event.codalmacen] : [],
      allowedCenters: null,
    },
    log: log.child({ request_id: event.requestid, event_id: event.id }),
    requestId,
  }
}

/** Who caused a `Ctx`'s work, for an event it emits: the fields it knows (none of them ''). */
export function causeOf(
  ctx: Pick<Ctx, 'auth' | 'requestId'>,
): Pick<CloudEvent, 'actorid' | 'actorname' | 'actortokenid' | 'requestid'> {
  const cause: Pick<CloudEvent, 'actorid' | 'actorname' | 'actortokenid' | 'requestid'> = {}
  if (ctx.auth.userId) cause.actorid = ctx.auth.userId
  if (ctx.auth.username) cause.actorname = ctx.auth.username
  if (ctx.auth.tokenId) cause.actortokenid = ctx.auth.tokenId
  if (ctx.requestId) cause.requestid = ctx.requestId
  return cause
}
