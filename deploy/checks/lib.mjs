// Shared by the deploy checks: the repository root, the one list of services, and reporting.
import { spawnSync } from 'node:child_process'
import { existsSync, readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import path from 'node:path'
import { apps, envName, namesOf, root, serviceList } from '../../scripts/lib.mjs'

export { envName, namesOf, root }
export const require = createRequire(import.meta.url)
export const rel = (p) => path.relative(root, p) || '.'
export const read = (p) => readFileSync(path.join(root, p), 'utf8')
export const get = (obj, dotted) => dotted.split('.').reduce((o, k) => (o == null ? undefined : o[k]), obj)
/** The URL, or undefined when it is none. */
export const parseUrl = (url) => {
  try {
    return new URL(url)
  } catch {
    return undefined
  }
}
export const has = (cmd, args) => spawnSync(cmd, args, { encoding: 'utf8' }).status === 0

/** packages/platform/services.json: every app (gateway first), its names, its ports, the resource services. */
export const APPS = apps
export const SERVICES = apps.map((s) => s.name)
export const PORTS = Object.fromEntries(apps.map((s) => [s.name, s.port]))
export const RESOURCES = serviceList.services.map((s) => s.name)

/**
 * What services/<name>/src/config.ts declares with neither a default nor `optional` (e.g. audit's
 * AUDIT_CHAIN_KEY, webhooks' WEBHOOKS_SECRET_KEY): without it the service stops at start-up.
 */
export function requiredVars(service) {
  const file = `services/${service}/src/config.ts`
  if (!existsSync(path.join(root, file))) return []
  // v.servicePort and v.serviceUrl default to what services.json says.
  return [...read(file).matchAll(/\b([A-Z][A-Z0-9_]+):\s*v\.(\w+)\(([^)]*)\)/g)]
    .filter((m) => !/^service(Port|Url)$/.test(m[2]) && !/\b(default|optional)\s*:/.test(m[3]))
    .map((m) => m[1])
}

/** Public keys: a placeholder there fails to parse anyway (a key, not a secret). */
const PUBLIC_KEYS = ['GATEWAY_VERIFY_KEY', 'SERVICE_VERIFY_KEYS']
/** Secrets by name: keys, passwords, tokens, and the URLs that carry a password. */
const SECRET_NAME =
  /(SECRET|PASSWORD|AUTH_TOKEN|_KEY|_KEYS)$|^(MIGRATION_)?DATABASE_URL$|^(AMQP|REDIS|SMTP)_URL$/

/**
 * The variables of the services' config.ts and the shared ones (packages/platform/src/service.ts)
 * that hold a secret but are not declared `secret: true`, so a placeholder (change-me...) left in
 * them would start the service instead of stopping it.
 */
export function unmarkedSecrets() {
  const files = [...SERVICES.map((s) => `services/${s}/src/config.ts`), 'packages/platform/src/service.ts']
  const out = new Set()
  for (const f of files.filter((x) => existsSync(path.join(root, x))))
    for (const [, name, opts] of read(f).matchAll(/\b([A-Z][A-Z0-9_]+):\s*v\.\w+\(([^)]*)\)/g))
      if (SECRET_NAME.test(name) && !PUBLIC_KEYS.includes(name) && !/\bsecret:\s*true\b/.test(opts))
        out.add(name)
  return [...out]
}

export const state = { failed: 0 }
/** One line per file: ok with what was checked, or FAIL with every problem found. */
export function report(file, problems, what) {
  if (problems.length) {
    state.failed++
    console.log(`FAIL ${file}: ${problems.length} problem(s)`)
    for (const p of problems) console.log(`       - ${p}`)
  } else console.log(`ok   ${file} (${what})`)
}
export function skip(what, why) {
  console.log(`skip ${what} (${why})`)
}
