import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { readFeedPage, type FeedSource } from '../domain/feed'
import { FeedPage, FeedQuery } from '../schemas/endpoint'
import { problem } from '@clinic/platform'

const feedRoute = {
  // `wait` holds the answer on purpose: that time is not logged as a slow request.
  config: { longPoll: 'wait' },
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
  // Long polls end (with what they have) when the client leaves or the service shuts down, so a
  // 30 s wait never outlasts the shutdown grace.
  const waiting = new Set<AbortController>()
  app.addHook('preClose', async () => {
    for (const w of waiting) w.abort()
  })
  app.get('/events', feedRoute, async (req, reply) => {
    const gone = new AbortController()
    waiting.add(gone)
    reply.raw.once('close', () => gone.abort())
    try {
      return await readFeedPage(req.ctx, feed, req.query, gone.signal)
    } finally {
      waiting.delete(gone)
    }
  })
}
