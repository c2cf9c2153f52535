import type { FastifyReply } from 'fastify'
import { etagOf } from '../etag'

/** A use case's answer: the resource, and whether it replays an Idempotency-Key's first answer. */
export interface ResourceResult<T extends { version: number }> {
  body: T
  replayed?: boolean
}

/**
 * Answers a resource the one way every route does: its status, its version as the ETag,
 * `Location` for a created (or accepted) one, `Idempotent-Replayed: true` on a replay.
 */
export function sendResource<T extends { version: number }>(
  reply: FastifyReply,
  { body, replayed }: ResourceResult<T>,
  o: { status?: number; location?: string } = {},
) {
  if (replayed) reply.header('idempotent-replayed', 'true')
  if (o.location) reply.header('location', o.location)
  return reply
    .code(o.status ?? 200)
    .header('etag', etagOf(body.version))
    .send(body)
}
