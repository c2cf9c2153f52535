import fp from 'fastify-plugin'
import type { FastifyInstance } from 'fastify'
import type { Redis } from 'ioredis'
import { RateLimited } from '@clinic/platform'

const WINDOW_MS = 60_000

/**
 * Requests per minute per client address, before authentication and on every route (unknown
 * ones too): a flood of missing or unknown tokens is refused before it costs a token lookup or an
 * audit row. Fixed one-minute windows, counted in Redis when several gateways share it (INCR and
 * PEXPIRE in one round trip), else in this process. If Redis fails, requests pass (as the
 * per-token limit does) and the failure is logged.
 */
export const addressLimit = fp(
  async (app: FastifyInstance, o: { max: number; redis?: Redis }) => {
    const local = new Map<string, { n: number; resetAt: number }>()
    const sweep = setInterval(() => {
      const now = Date.now()
      for (const [k, v] of local) if (v.resetAt <= now) local.delete(k)
    }, WINDOW_MS)
    sweep.unref()
    app.addHook('onClose', async () => clearInterval(sweep))

    const count = async (ip: string): Promise<{ n: number; resetInMs: number }> => {
      const now = Date.now()
      if (o.redis) {
        const key = `clinic-gw-addr-${ip}`
        const res = await o.redis.multi().incr(key).pexpire(key, WINDOW_MS, 'NX').pttl(key).exec()
        return { n: Number(res?.[0]?.[1] ?? 0), resetInMs: Math.max(0, Number(res?.[2]?.[1] ?? WINDOW_MS)) }
      }
      let w = local.get(ip)
      if (!w || w.resetAt <= now) local.set(ip, (w = { n: 0, resetAt: now + WINDOW_MS }))
      w.n++
      return { n: w.n, resetInMs: w.resetAt - now }
    }

    app.addHook('onRequest', async (req) => {
      let seen: { n: number; resetInMs: number }
      try {
        seen = await count(req.ip)
      } catch (err) {
        req.log.warn({ err: (err as Error).message }, 'address rate limit skipped (redis)')
        return
      }
      if (seen.n > o.max) throw new RateLimited(Math.max(1, Math.ceil(seen.resetInMs / 1000)))
    })
  },
  { name: 'address-limit' },
)
