/**
 * Runs `write` until it succeeds, waiting 250 ms, 500 ms, ... (at most 5 s) between tries, while
 * the error is one worth waiting out (`retryIf`, every error without it) and `until` (epoch ms) has
 * not passed; then the last error stands. For a background job's outcome that must not be lost to
 * a database outage, nor redone: the work is done, only its record is tried again.
 */
export async function retryUntil<T>(
  write: () => Promise<T>,
  o: { until: number; retryIf?: (err: Error) => boolean; onRetry: (err: unknown) => void },
): Promise<T> {
  for (let n = 0; ; n++) {
    try {
      return await write()
    } catch (err) {
      if ((o.retryIf && !o.retryIf(err as Error)) || Date.now() > o.until) throw err
      o.onRetry(err)
      await new Promise((r) => setTimeout(r, Math.min(5000, 250 * 2 ** n)))
    }
  }
}
