import fp from 'fastify-plugin'
import type { FastifyInstance } from 'fastify'
import type { Redis } from 'ioredis'
import { RateLimited } from '@clinic/platform'
import { addressKey } from '../address-key'
import { retryAfterOf, windowCounter } from './window-counter'

/**
 * Requests per minute per client address (an IPv6 address by its /64), before authentication and
 * on every route (unknown ones too): a flood of missing or unknown tokens is refused before it costs
 * a token lookup or an audit row. Fixed one-minute windows, shared through Redis when set
 * (window-counter.ts). If Redis fails, requests pass (as the per-token limit does) and the failure
 * is logged.
 */
export const addressLimit = fp(
  async (app: FastifyInstance, o: { max: number; redis?: Redis }) => {
    const counter = windowCounter({ prefix: 'clinic-gw-addr-', redis: o.redis })
    app.addHook('onClose', async () => counter.close())

    app.addHook('onRequest', async (req) => {
      let seen: { n: number; resetInMs: number }
      try {
        seen = await counter.count(addressKey(req.ip))
      } catch (err) {
        req.log.warn({ err: (err as Error).message }, 'address rate limit skipped (redis)')
        return
      }
      if (seen.n > o.max) throw new RateLimited(retryAfterOf(seen.resetInMs))
    })
  },
  { name: 'address-limit' },
)
