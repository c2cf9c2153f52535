// @clinic/platform/testing: what the tests of every service share (never imported by src/).
/** Polls until `fn` returns a truthy value (or stops throwing); never a bare sleep. */
export async function waitFor<T>(
  fn: () => Promise<T> | T,
  { timeoutMs = 10_000, intervalMs = 50, what = 'condition' } = {},
): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs
  let lastErr: unknown
  for (;;) {
    try {
      const v = await fn()
      if (v) return v as NonNullable<T>
    } catch (err) {
      lastErr = err
    }
    if (Date.now() > deadline)
      throw new Error(
        `timed out after ${timeoutMs} ms waiting for ${what}${lastErr ? `: ${String(lastErr)}` : ''}`,
      )
    await new Promise((r) => setTimeout(r, intervalMs))
  }
}

export * from './broker'
export * from './databases'
export * from './host'
export * from './proxy'
export * from './gateway'
export * from './events'
export * from './fake-store'
export * from './internal-answers'
export * from './fhir-validator'
