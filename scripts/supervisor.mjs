// The process manager under `npm start`: keeps every process running the way Compose's
// `restart: unless-stopped` or a Kubernetes Deployment would. A process that exits is started
// again after a growing delay (restartMs, doubling up to maxRestartMs; back to the start once it has
// stayed up for stableMs). `stop()` (Ctrl-C) sends SIGTERM to all at once, SIGKILL after graceMs.

/**
 * @typedef {{ name: string, start: (attempt: number) => import('node:child_process').ChildProcess }} Spec
 * @typedef {{ restartMs?: number, maxRestartMs?: number, stableMs?: number, graceMs?: number }} Timing
 * @param {Spec[]} specs
 * @param {Timing & { log?: (line: string, fields: Record<string, unknown>) => void }} [o]
 */
export function supervise(specs, o = {}) {
  const restartMs = o.restartMs ?? 500
  const maxRestartMs = o.maxRestartMs ?? 30_000
  const stableMs = o.stableMs ?? 10_000
  const graceMs = o.graceMs ?? 15_000
  const log = o.log ?? ((line) => console.error(line))
  /** @type {Map<string, { child: import('node:child_process').ChildProcess | null, failures: number, attempt: number, timer: NodeJS.Timeout | null, startedAt: number }>} */
  const state = new Map()
  let stopping = false
  /** @type {Array<() => void>} */
  const idle = []

  const running = () => [...state.values()].filter((s) => s.child)
  const checkIdle = () => {
    if (stopping && running().length === 0) for (const done of idle.splice(0)) done()
  }

  function launch(spec) {
    const s = state.get(spec.name)
    s.attempt++
    s.startedAt = Date.now()
    const child = spec.start(s.attempt)
    s.child = child
    child.on('exit', (code, signal) => {
      s.child = null
      if (stopping) return checkIdle()
      const upMs = Date.now() - s.startedAt
      if (upMs >= stableMs) s.failures = 0
      const delay = Math.min(maxRestartMs, restartMs * 2 ** s.failures)
      s.failures++
      const how = signal ? `signal ${signal}` : `exit code ${code}`
      log(`[${spec.name}] exited (${how}) after ${upMs} ms; restarting in ${delay} ms`, {
        name: spec.name,
        code,
        signal,
        delay_ms: delay,
        restarts: s.failures,
      })
      s.timer = setTimeout(() => {
        s.timer = null
        if (!stopping) launch(spec)
      }, delay)
    })
  }

  for (const spec of specs) {
    state.set(spec.name, { child: null, failures: 0, attempt: 0, timer: null, startedAt: 0 })
    launch(spec)
  }

  return {
    /** The live child of `name`, if any. */
    child: (name) => state.get(name)?.child ?? null,
    get stopping() {
      return stopping
    },
    /** SIGTERM to every process at once; resolves when all have exited (SIGKILL after graceMs). */
    stop() {
      stopping = true
      for (const s of state.values()) {
        if (s.timer) clearTimeout(s.timer)
        s.timer = null
        s.child?.kill('SIGTERM')
      }
      const done = new Promise((resolve) => idle.push(resolve))
      const force = setTimeout(() => {
        for (const s of running()) s.child.kill('SIGKILL')
      }, graceMs)
      force.unref()
      checkIdle()
      return done.then(() => clearTimeout(force))
    },
  }
}
