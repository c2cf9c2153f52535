// The API answers 429 (rate limit, messaging quota) and 503 (a service or dependency down) with
// Retry-After, and in both cases it did nothing: the request can be sent again as it was.

export type Fetch = (request: Request, init?: RequestInit) => Promise<Response>

export interface RetryOptions {
  /** Retries after the first attempt. */
  maxRetries: number
  /** Longer waits are not taken (a daily messaging quota says "tomorrow"): the answer is returned. */
  maxWaitMs: number
  sleep: (ms: number) => Promise<void>
}

/** A fetch that honours Retry-After on 429 and 503 answers, then returns the last answer. */
export function retryingFetch(fetch: Fetch, { maxRetries, maxWaitMs, sleep }: RetryOptions): Fetch {
  return async (request, init) => {
    for (let attempt = 0; ; attempt++) {
      // A body can be read once: every attempt sends a copy, so a retried POST carries it intact
      // (and the same Idempotency-Key, set on the request before it got here).
      const response = await fetch(request.clone(), init)
      const wait = attempt < maxRetries ? retryDelay(response) : undefined
      if (wait === undefined || wait > maxWaitMs) return response
      // Unread bodies hold the connection until garbage collection.
      await response.body?.cancel()
      await sleep(wait)
    }
  }
}

/** Milliseconds to wait before retrying this answer, or undefined when it is not to be retried. */
export function retryDelay(response: Response, now = Date.now()): number | undefined {
  if (response.status !== 429 && response.status !== 503) return undefined
  const value = response.headers.get('retry-after')?.trim()
  if (!value) return undefined
  if (/^\d+$/.test(value)) return Number(value) * 1000
  const at = Date.parse(value) // the HTTP-date form
  return Number.isNaN(at) ? undefined : Math.max(0, at - now)
}

export const realSleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))
