import fp from 'fastify-plugin'
import type { FastifyInstance } from 'fastify'

/**
 * On every answer, the gateway's own and the services' alike: `Cache-Control: no-store` (answers
 * hold patient data; no browser, proxy or CDN keeps a copy) unless the answer set its own, and
 * `X-Content-Type-Options: nosniff` (a browser takes a JSON answer for JSON, never for a script or
 * a page).
 */
export const responseHeaders = fp(
  async (app: FastifyInstance) => {
    app.addHook('onSend', (_req, reply, payload, done) => {
      if (!reply.hasHeader('cache-control')) reply.header('cache-control', 'no-store')
      reply.header('x-content-type-options', 'nosniff')
      done(null, payload)
    })
  },
  { name: 'response-headers' },
)
