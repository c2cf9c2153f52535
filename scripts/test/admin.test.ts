import { spawnSync } from 'node:child_process'
import path from 'node:path'

const root = path.resolve(__dirname, '..', '..')

describe('npm run admin (scripts/admin.mjs)', () => {
  it('runs with no DATABASE_URL in the environment (the stack default), signing key or not', () => {
    const env: NodeJS.ProcessEnv = { ...process.env, EVENT_SIGNING_SECRET: 'x'.repeat(40) }
    delete env.DATABASE_URL
    // An unknown command: the gateway's CLI answers its usage error before any database work.
    const r = spawnSync(process.execPath, [path.join(root, 'scripts', 'admin.mjs'), 'no:such'], {
      env,
      cwd: root,
      encoding: 'utf8',
    })
    expect(r.stderr).not.toMatch(/TypeError|Invalid URL/)
    expect(r.stderr).toContain('unknown command no:such')
    expect(r.status).toBe(2)
  })
})
