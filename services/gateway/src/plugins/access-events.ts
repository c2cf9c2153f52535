import fp from 'fastify-plugin'
import type { FastifyInstance } from 'fastify'
import { routeConfig, traceOf } from '@clinic/platform'
import type { AccessLog } from '../access-log'
import { isPublic } from './authenticate'
import { codalmacenOf } from './centers'

/** The URL's path, without its query string. */
const pathOf = (url: string) => {
  const q = url.indexOf('?')
  return q < 0 ? url : url.slice(0, q)
}

/**
 * An `http.request` event for the audit trail for every non-public answer, committed before the
 * answer leaves (see AccessLog): whoever got an answer is on the trail. Of the public ones,
 * provider callbacks (services.json `webhooks`) and CORS preflights reach the API without a
 * token: they are counted per method, status, address and minute (`http.public`, company 0, as
 * refusals are counted), not recorded one by one. Health, the docs and pages for people are not
 * on the trail.
 */
export const accessEvents = fp(
  async (app: FastifyInstance, { accessLog }: { accessLog: AccessLog }) => {
    // A callback hook: the answer waits for its event's commit, and for nothing else.
    app.addHook('onSend', (req, reply, payload, done) => {
      if (req.method === 'OPTIONS' || routeConfig(req).webhook === true) {
        const { method, ip } = req
        accessLog.publicRequest({ method, status: reply.statusCode, ip, path: pathOf(req.url) })
        return done(null, payload)
      }
      if (isPublic(req)) return done(null, payload)
      // Refused before it had a principal (no token, an unknown, revoked or expired one, another
      // user's, or refused before the check: 401, 400, 429): counted per company (of a token that
      // was found; else 0), address and minute, not a row each.
      if (!req.principal) {
        accessLog.refused({ ip: req.ip, path: pathOf(req.url), companyId: req.refusedCompany })
        return done(null, payload)
      }
      const code = codalmacenOf(req.query)
      accessLog
        .record({
          method: req.method,
          path: pathOf(req.url),
          status: reply.statusCode,
          durationMs: reply.elapsedTime,
          ip: req.ip,
          requestId: String(req.id),
          trace: traceOf(req.span),
          principal: req.principal,
          codalmacen: typeof code === 'string' && req.principal.companyCenters.includes(code) ? code : null,
        })
        .then(() => done(null, payload), done)
    })
  },
  { name: 'access-events', dependencies: ['authenticate'] },
)
