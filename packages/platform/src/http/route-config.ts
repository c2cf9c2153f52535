import type { FastifyRequest } from 'fastify'

declare module 'fastify' {
  interface FastifyRequest {
    /** routeConfig's memo: the config of the request's route, read once. */
    routeConfigOnce?: FastifyRequest['routeOptions']['config']
  }
}

/**
 * The config of the request's route (`config`, with its `url` and `method`), read once per request:
 * fastify's `req.routeOptions` builds a new object on every read, and the hooks of a request read
 * it a dozen times (public, internal, webhook, the access line's route, the metrics' label...).
 */
export const routeConfig = (req: FastifyRequest): FastifyRequest['routeOptions']['config'] =>
  (req.routeConfigOnce ??= req.routeOptions.config)
