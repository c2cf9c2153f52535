import { readFileSync } from 'node:fs'
import path from 'node:path'

const CALVER = /^\d{6}\.\d{2}$/

/** The CalVer (YYMMDD.NN) of the VERSION file at the repository root (or $SERVICE_VERSION in images). */
export function readVersion(env: NodeJS.ProcessEnv = process.env): string {
  const fromEnv = env.SERVICE_VERSION
  const v = fromEnv ?? readFileSync(path.resolve(__dirname, '../../../VERSION'), 'utf8').trim()
  if (!CALVER.test(v)) throw new Error(`VERSION must be CalVer YYMMDD.NN, got "${v}"`)
  return v
}
