import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { readFeedPage, type FeedSource } from '../domain/feed'
import { FeedPage, FeedQuery } from '../schemas/endpoint'
import { problem } from '@clinic/platform'

const feedRoute = {
  schema: {
    tags: ['events'],
    operationId: 'listEvents',
    summary: 'The change feed: every event of the company, in order',
    description:
      "The same events as the webhooks (thin `data`), in the order the service stored them. Pass `meta.next` as `after` to go on; `wait` (up to 30 s) answers as soon as an event arrives. Events are kept `EVENTS_RETENTION_DAYS` (30): an older cursor is 410 cursor_expired. A token limited to centers sees its centers' events.",
    querystring: FeedQuery,
    response: { 200: FeedPage, 410: problem('cursor_expired') },
  },
}

/** GET /events (DESIGN.md section 10). */
export const feedRoutes: FastifyPluginAsyncTypebox<{ feed: FeedSource }> = async (app, { feed }) => {
  app.get('/events', feedRoute, async (req, reply) => {
    const gone = new AbortController()
    reply.raw.once('close', () => gone.abort())
    return readFeedPage(req.ctx, feed, req.query, gone.signal)
  })
}
