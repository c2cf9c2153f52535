import { spawnSync } from 'node:child_process'
import { createServer } from 'node:net'

/** A port nothing listens on right now (also what a dead upstream looks like). */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer()
    srv.unref()
    srv.on('error', reject)
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number }
      srv.close(() => resolve(port))
    })
  })
}

/**
 * True when a Docker engine answers (the container suites run on it). Synchronous, so a suite can
 * choose `describe` or `describe.skip` as it loads. scripts/ensure-docker.mjs asks the same question
 * before it installs or starts one.
 */
export function dockerEngineAnswers(): boolean {
  return spawnSync('docker', ['version', '--format', '{{.Server.Version}}'], { timeout: 10_000 }).status === 0
}
