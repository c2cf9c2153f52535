import type { Redis } from 'ioredis'

const WINDOW_MS = 60_000

export interface WindowCount {
  n: number
  resetInMs: number
}

export interface WindowCounter {
  /** Counts one more for `key` in the current minute; what it has counted and when the minute ends. */
  /** At once when counted in this process; a promise when counted in Redis. */
  count(key: string): WindowCount | Promise<WindowCount>
  close(): void
}

/**
 * Fixed one-minute windows per key, counted in Redis when several gateways share it (INCR and
 * PEXPIRE in one round trip), else in this process. A Redis failure rejects: the caller decides
 * (the limits let the request through and log it, as the per-token limit does).
 */
export function windowCounter(o: { prefix: string; redis?: Redis }): WindowCounter {
  const local = new Map<string, { n: number; resetAt: number }>()
  const sweep = setInterval(() => {
    const now = Date.now()
    for (const [k, v] of local) if (v.resetAt <= now) local.delete(k)
  }, WINDOW_MS)
  sweep.unref()
  return {
    count(key) {
      const now = Date.now()
      if (o.redis) {
        const k = `${o.prefix}${key}`
        return o.redis
          .multi()
          .incr(k)
          .pexpire(k, WINDOW_MS, 'NX')
          .pttl(k)
          .exec()
          .then((res) => ({
            n: Number(res?.[0]?.[1] ?? 0),
            resetInMs: Math.max(0, Number(res?.[2]?.[1] ?? WINDOW_MS)),
          }))
      }
      let w = local.get(key)
      if (!w || w.resetAt <= now) local.set(key, (w = { n: 0, resetAt: now + WINDOW_MS }))
      w.n++
      return { n: w.n, resetInMs: w.resetAt - now }
    },
    close: () => clearInterval(sweep),
  }
}

/** Seconds until the window ends, for Retry-After: at least 1. */
export const retryAfterOf = (resetInMs: number) => Math.max(1, Math.ceil(resetInMs / 1000))
