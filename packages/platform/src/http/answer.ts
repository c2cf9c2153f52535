import type { FastifyReply } from 'fastify'
import { etagOf } from '../etag'

/** A use case's answer: the resource, and whether it replays an Idempotency-Key's first answer. */
export interface ResourceResult<T extends object> {
  body: T
  replayed?: boolean
}

/**
 * Answers a resource the one way every route does: its status, its version as the ETag (a resource
 * that has one: a hold or a time off is never changed, so has none), `Location` for a created (or
 * accepted) one, `Idempotent-Replayed: true` on a replay.
 */
export function sendResource<T extends object>(
  reply: FastifyReply,
  { body, replayed }: ResourceResult<T>,
  o: { status?: number; location?: string } = {},
) {
  if (replayed) reply.header('idempotent-replayed', 'true')
  if (o.location) reply.header('location', o.location)
  const { version } = body as { version?: unknown }
  if (typeof version === 'number') reply.header('etag', etagOf(version))
  return reply.code(o.status ?? 200).send(body)
}
