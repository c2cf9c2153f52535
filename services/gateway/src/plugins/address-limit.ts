import fp from 'fastify-plugin'
import type { FastifyInstance } from 'fastify'
import type { Redis } from 'ioredis'
import { RateLimited } from '@clinic/platform'
import { addressKey } from '../address-key'
import { retryAfterOf, windowCounter, type WindowCount } from './window-counter'

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

    const over = (seen: WindowCount) =>
      seen.n > o.max ? new RateLimited(retryAfterOf(seen.resetInMs)) : undefined
    // A callback hook: counted in this process, nothing is awaited (no promise per request).
    app.addHook('onRequest', (req, _reply, done) => {
      const seen = counter.count(addressKey(req.ip))
      if (!(seen instanceof Promise)) return done(over(seen))
      seen.then(
        (s) => done(over(s)),
        (err: Error) => {
          req.log.warn({ err: err.message }, 'address rate limit skipped (redis)')
          done()
        },
      )
    })
  },
  { name: 'address-limit' },
)
