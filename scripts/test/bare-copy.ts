import { cpSync, mkdtempSync, symlinkSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'

const ROOT = path.resolve(__dirname, '../..')

/** What the generator and the scaffold read and write: a copy of these stands in for the checkout. */
const READ_AND_WRITTEN = [
  'scripts',
  'deploy',
  'packages/platform/services.json',
  'packages/platform/naming.cjs',
  'packages/platform/topology.cjs',
  'packages/platform/broker-users.cjs',
  'packages/platform/package.json',
  'packages/platform/src/contracts',
  'packages/platform/src/internal-api',
  'package.json',
  'tsconfig.json',
  'VERSION',
  '.env.example',
  '.prettierrc.json',
  '.prettierignore',
]

/**
 * A temporary folder holding a copy of what scripts/generate.mjs and scripts/new-service.mjs read
 * and write, with the checkout's node_modules linked, so a test may change it and the checkout is
 * never touched. The caller removes it.
 */
export function bareCopy(prefix: string): string {
  const copy = mkdtempSync(path.join(tmpdir(), prefix))
  for (const p of READ_AND_WRITTEN) cpSync(path.join(ROOT, p), path.join(copy, p), { recursive: true })
  symlinkSync(path.join(ROOT, 'node_modules'), path.join(copy, 'node_modules'))
  return copy
}
