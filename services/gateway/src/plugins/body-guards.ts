import fp from 'fastify-plugin'
import type { FastifyInstance } from 'fastify'
import { BODY_LIMIT, PayloadTooLarge, UnsupportedMediaType } from '@clinic/platform'

const JSON_TYPE = /^application\/([a-z0-9.+-]*\+)?json\s*(;|$)/i
/** Provider callbacks (Twilio) post forms. */
const WEBHOOK_TYPE = /^application\/(x-www-form-urlencoded|([a-z0-9.+-]*\+)?json)\s*(;|$)/i
/**
 * Pages for people (services.json `pages`) take forms only: an HTML form's, or a mail client's
 * one-click unsubscribe (RFC 8058 allows either encoding).
 */
const FORM_TYPE = /^(application\/x-www-form-urlencoded|multipart\/form-data)\s*(;|$)/i

declare module 'fastify' {
  interface FastifyContextConfig {
    /** A provider callback: public (no API token), and a form body is accepted. */
    webhook?: boolean
    /** A page for people: public (no API token), and only a form body is accepted. */
    page?: boolean
    /** This route's request body limit in bytes, when it is not BODY_LIMIT (services.json). */
    bodyLimit?: number
  }
}

/**
 * Before anything is read or proxied: a body is JSON (415 otherwise) of 64 KiB at most (413), or
 * of the route's own limit where services.json gives one.
 */
export const bodyGuards = fp(
  async (app: FastifyInstance) => {
    app.addHook('onRequest', async (req) => {
      const length = Number(req.headers['content-length'] ?? 0)
      const hasBody = length > 0 || req.headers['transfer-encoding'] !== undefined
      if (!hasBody) return
      const limit = req.routeOptions.config?.bodyLimit ?? BODY_LIMIT
      if (length > limit) throw new PayloadTooLarge(limit)
      const type = req.headers['content-type'] ?? ''
      const config = req.routeOptions.config
      const allowed = config?.page ? FORM_TYPE : config?.webhook ? WEBHOOK_TYPE : JSON_TYPE
      if (!allowed.test(type)) throw new UnsupportedMediaType()
    })
  },
  { name: 'body-guards' },
)
