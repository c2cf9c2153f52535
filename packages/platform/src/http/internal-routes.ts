import type { Static, TSchema } from '@sinclair/typebox'
import type { FastifyContextConfig, FastifyReply, FastifyRequest, RouteOptions } from 'fastify'
import { CALLS, callersOf, type InternalEndpoint } from '../internal-api/services'
import { problem } from '../schemas'

/** The request of an internal route: its path parameters and body as its declaration types them. */
export type InternalRequest<E extends InternalEndpoint> = FastifyRequest<{
  Params: Static<E['params']>
  Body: E extends { body: infer B extends TSchema } ? Static<B> : undefined
}>

/** What an internal route answers: its declared answer (the platform sends it with `ok`), or the reply it sent. */
export type InternalHandler<E extends InternalEndpoint> = (
  req: InternalRequest<E>,
  reply: FastifyReply,
) => Promise<Static<E['answer']> | FastifyReply>

/** Fastify or any plugin's instance of it, whatever its type provider and logger. */
interface Routes {
  route(options: never): unknown
}

/**
 * Registers the callee's route of an internal endpoint from its declaration (internal-api/): its
 * method, path, schemas (hidden from the OpenAPI document, tagged `internal`) and callers, so the
 * callers' clients and the route cannot drift. Only the callers' own assertions are taken there
 * (`config.callers`: the declaration's, else every service that `calls` this one); the gateway's
 * are refused. `extra` adds what the route needs beyond (a body limit, `config.rules`).
 */
export function serveInternal<E extends InternalEndpoint>(
  app: Routes,
  endpoint: E,
  handler: InternalHandler<E>,
  extra: { bodyLimit?: number; config?: Omit<FastifyContextConfig, 'callers'> } = {},
): void {
  const callers = callersOf(endpoint, CALLS)
  const known = callersOf({ ...endpoint, callers: undefined }, CALLS)
  const strangers = callers.filter((c) => !known.includes(c))
  if (strangers.length)
    throw new Error(
      `${endpoint.operationId} names ${strangers.join(', ')} as callers, which services.json does not list as calling ${endpoint.service}`,
    )
  const refusals = Object.entries(endpoint.refusals).map(([status, meaning]) => [status, problem(meaning)])
  const route: RouteOptions = {
    method: endpoint.method,
    url: endpoint.path,
    ...(extra.bodyLimit ? { bodyLimit: extra.bodyLimit } : {}),
    config: { ...extra.config, callers },
    schema: {
      hide: true,
      tags: ['internal'],
      operationId: endpoint.operationId,
      summary: endpoint.summary,
      params: endpoint.params,
      ...(endpoint.body ? { body: endpoint.body } : {}),
      response: { [endpoint.ok]: endpoint.answer, ...Object.fromEntries(refusals) },
    },
    handler: async (req, reply) => {
      const answer = await handler(req as InternalRequest<E>, reply)
      return answer === reply ? reply : reply.code(endpoint.ok).send(answer)
    },
  }
  app.route(route as never)
}
