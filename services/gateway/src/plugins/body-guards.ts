import fp from 'fastify-plugin'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { BODY_LIMIT, PayloadTooLarge, UnsupportedMediaType, routeConfig } from '@clinic/platform'

const JSON_TYPE = /^application\/([a-z0-9.+-]*\+)?json\s*(;|$)/i
/** Provider callbacks (Twilio) post forms. */
const WEBHOOK_TYPE = /^application\/(x-www-form-urlencoded|([a-z0-9.+-]*\+)?json)\s*(;|$)/i
/**
 * Pages for people (services.json `pages`) take forms only: an HTML form's, or a mail client's
 * one-click unsubscribe (RFC 8058 allows either encoding).
 */
const FORM_TYPE = /^(application\/x-www-form-urlencoded|multipart\/form-data)\s*(;|$)/i
const MULTIPART_TYPE = /^multipart\/form-data\s*(;|$)/i

/** The byte limit of an upload route's POST (streamed, services.json `uploads`), else undefined. */
export const uploadLimitOf = (req: FastifyRequest): number | undefined =>
  req.method === 'POST' ? routeConfig(req).upload : undefined

declare module 'fastify' {
  interface FastifyContextConfig {
    /** A provider callback: public (no API token), and a form body is accepted. */
    webhook?: boolean
    /** A page for people: public (no API token), and only a form body is accepted. */
    page?: boolean
    /** This route's request body limit in bytes, when it is not BODY_LIMIT (services.json). */
    bodyLimit?: number
    /**
     * A multipart upload (services.json `uploads`): POST bodies of multipart/form-data, streamed to
     * the service as they arrive, at most this many bytes.
     */
    upload?: number
  }
}

/**
 * Before anything is read or proxied: a body is JSON (415 otherwise) of 64 KiB at most (413), or
 * of the route's own limit where services.json gives one.
 */
/** Why the request's body is refused before it is read (too large, a type the route does not take), or null. */
function refusal(req: FastifyRequest): Error | null {
  const length = Number(req.headers['content-length'] ?? 0)
  const hasBody = length > 0 || req.headers['transfer-encoding'] !== undefined
  if (!hasBody) return null
  const upload = uploadLimitOf(req)
  const config = routeConfig(req)
  const limit = upload ?? config.bodyLimit ?? BODY_LIMIT
  if (length > limit) return new PayloadTooLarge(limit)
  const type = req.headers['content-type'] ?? ''
  if (upload !== undefined) return MULTIPART_TYPE.test(type) ? null : new UnsupportedMediaType()
  const allowed = config?.page ? FORM_TYPE : config?.webhook ? WEBHOOK_TYPE : JSON_TYPE
  return allowed.test(type) ? null : new UnsupportedMediaType()
}

export const bodyGuards = fp(
  async (app: FastifyInstance) => {
    // A callback hook: nothing is awaited, and an async hook costs a promise per request.
    app.addHook('onRequest', (req, _reply, done) => done(refusal(req) ?? undefined))
  },
  { name: 'body-guards' },
)
