// The Dockerfile and .dockerignore: static checks (base image pinned by digest, pnpm pin, deploy
// --prod, non-root user, HEALTHCHECK, CMD) against the workspace's package.json files and
// packages/platform/services.json; any other Dockerfile: every FROM pinned by digest.
import { existsSync } from 'node:fs'
import path from 'node:path'
import { dockerfiles, pinProblem, tagOf } from './images.mjs'
import { SERVICES, read, report, root } from './lib.mjs'

function parseDockerfile(text) {
  const out = []
  let cur = ''
  for (const raw of text.split('\n')) {
    const line = raw.trimEnd()
    if (/^\s*#/.test(line) && (cur === '' || !line.startsWith('#!'))) continue // comments, also inside continuations
    if (line.endsWith('\\')) {
      cur += line.slice(0, -1) + ' '
      continue
    }
    cur += line
    if (cur.trim()) {
      const m = /^\s*(\w+)\s+([\s\S]*)$/.exec(cur)
      if (m) out.push({ op: m[1].toUpperCase(), args: m[2].trim() })
    }
    cur = ''
  }
  return out
}

/** The image each FROM names, ${ARG}s resolved; a FROM naming an earlier stage is not an image. */
function fromImages(ins, args) {
  const stages = new Set()
  const out = []
  for (const i of ins.filter((x) => x.op === 'FROM')) {
    const [image, as, stage] = i.args.split(/\s+/)
    const resolved = image.replace(/^\$\{?(\w+)\}?$/, (_, a) => args[a] ?? '?')
    if (!stages.has(resolved)) out.push(resolved)
    if (/^as$/i.test(as ?? '') && stage) stages.add(stage)
  }
  return out
}

/**
 * Every other Dockerfile of the repository: each FROM that is an image pinned by digest. The
 * stand-ins of deploy/images/ are the exception: they start from the Debian image that
 * deploy/images/images.mjs makes with debootstrap on the machine (no registry has it), named by
 * their ARG BASE, which must have no default.
 */
export function checkOtherDockerfiles() {
  for (const file of dockerfiles().filter((f) => f !== 'Dockerfile')) {
    const ins = parseDockerfile(read(file))
    if (file.startsWith('deploy/images/')) {
      const froms = ins.filter((i) => i.op === 'FROM').map((i) => i.args)
      const problems = []
      if (froms.length !== 1 || froms[0] !== '${BASE}')
        problems.push(`FROM ${froms.join(', ')}: a stand-in is FROM \${BASE}`)
      if (!ins.some((i) => i.op === 'ARG' && i.args === 'BASE')) problems.push('ARG BASE, without a default')
      report(file, problems, 'stand-in FROM ${BASE} (made on the machine by debootstrap)')
      continue
    }
    const args = Object.fromEntries(
      ins
        .filter((i) => i.op === 'ARG' && i.args.includes('='))
        .map((i) => i.args.split('=').map((s) => s.trim().replace(/^"|"$/g, ''))),
    )
    const froms = fromImages(ins, args).filter((f) => f !== 'scratch')
    report(
      file,
      froms.flatMap((f) => pinProblem(f) ?? []).map((p) => `FROM ${p}`),
      `${froms.length} FROM pinned by digest`,
    )
  }
}

export function checkDockerfile() {
  const problems = []
  const file = 'Dockerfile'
  if (!existsSync(path.join(root, file))) return report(file, ['missing'], '')
  const ins = parseDockerfile(read(file))
  const pkg = JSON.parse(read('package.json'))
  const pnpmVersion = pkg.packageManager?.split('@')[1]

  const args = Object.fromEntries(
    ins
      .filter((i) => i.op === 'ARG' && i.args.includes('='))
      .map((i) => i.args.split('=').map((s) => s.trim().replace(/^"|"$/g, ''))),
  )
  const froms = fromImages(ins, args)
  if (froms.length < 2) problems.push('expected a multi-stage build (build + runtime)')
  for (const f of froms) {
    if (tagOf(f) !== 'node:24-slim') problems.push(`stage FROM ${f}: expected node:24-slim`)
    const pin = pinProblem(f)
    if (pin) problems.push(`stage FROM ${pin}`)
  }
  if (args.PNPM_VERSION !== pnpmVersion)
    problems.push(
      `PNPM_VERSION ${args.PNPM_VERSION} differs from package.json packageManager pnpm@${pnpmVersion}`,
    )

  const runs = ins
    .filter((i) => i.op === 'RUN')
    .map((i) => i.args)
    .join('\n')
  for (const [needle, why] of [
    ['--frozen-lockfile', 'install from the lockfile (--frozen-lockfile)'],
    ['tsc -b', 'build with tsc -b'],
    ['deploy --prod', 'pnpm deploy --prod of the service'],
    ['readVersion()', 'check that the image knows its VERSION'],
  ])
    if (!runs.includes(needle)) problems.push(`no RUN step does: ${why}`)
  if (!ins.some((i) => i.op === 'ARG' && /^SERVICE\b/.test(i.args))) problems.push('no ARG SERVICE')

  const lastFrom = ins.map((i) => i.op).lastIndexOf('FROM')
  const runtime = ins.slice(lastFrom)
  const user = runtime.filter((i) => i.op === 'USER').pop()?.args
  if (!user) problems.push('runtime stage has no USER')
  else if (!/^[1-9]\d*(:\d+)?$/.test(user))
    problems.push(`runtime USER ${user}: expected a numeric non-root uid (Kubernetes runAsNonRoot)`)
  const health = runtime.find((i) => i.op === 'HEALTHCHECK')?.args ?? ''
  if (!health.includes('/health/live') || !health.includes('fetch('))
    problems.push('runtime HEALTHCHECK must fetch /health/live with node')
  if (!health.includes("require('@clinic/platform/naming')"))
    problems.push('runtime HEALTHCHECK must take the port and its variable from @clinic/platform/naming')
  if (/toUpperCase|_PORT'/.test(health)) problems.push('runtime HEALTHCHECK names the port variable by hand')
  // No hand copy of the list: the allow-list of SERVICE comes from services.json at build time.
  if (!runs.includes("require('./packages/platform/naming.cjs')"))
    problems.push('no RUN step checks SERVICE against packages/platform/services.json (naming.cjs)')
  const text = read(file)
  for (const s of SERVICES)
    if (new RegExp(`(?<![-.\\w])${s}(?![-\\w])`).test(text.replace(/^\s*#.*$/gm, '')))
      problems.push(`names the service ${s}: read packages/platform/services.json instead of a list`)
  const cmd = runtime.filter((i) => i.op === 'CMD').pop()?.args
  if (!cmd) problems.push('runtime stage has no CMD')
  else if (JSON.stringify(JSON.parse(cmd)) !== JSON.stringify(['node', 'dist/server.js']))
    problems.push(`CMD ${cmd}: expected ["node","dist/server.js"]`)
  if (runtime.some((i) => i.op === 'ENV' && /\bNODE_ENV\b/.test(i.args)))
    problems.push('runtime sets NODE_ENV: the services must not rely on it')
  if (!runtime.some((i) => i.op === 'ENV' && /\bHOST=0\.0\.0\.0\b/.test(i.args)))
    problems.push('runtime must set HOST=0.0.0.0')

  checkServicePackages(problems)
  report(
    file,
    problems,
    `${froms.length} stages on node:24-slim pinned by digest, pnpm@${pnpmVersion}, USER ${user}, HEALTHCHECK, CMD`,
  )
}

/** The image runs what the packages say they run. */
function checkServicePackages(problems) {
  for (const s of SERVICES) {
    const p = `services/${s}/package.json`
    if (!existsSync(path.join(root, p))) {
      problems.push(`${p} missing`)
      continue
    }
    const scripts = JSON.parse(read(p)).scripts ?? {}
    if (scripts.start !== 'node dist/server.js')
      problems.push(`${p}: start script is not "node dist/server.js"`)
    if (scripts['db:migrate'] !== 'node dist/db/migrate.js')
      problems.push(`${p}: db:migrate script is not "node dist/db/migrate.js"`)
  }
}

export function checkDockerignore() {
  const file = '.dockerignore'
  if (!existsSync(path.join(root, file))) return report(file, ['missing'], '')
  const lines = read(file)
    .split('\n')
    .map((l) => l.trim())
  const problems = []
  for (const want of ['**/node_modules', '**/dist', '.git', 'var', '.env'])
    if (!lines.includes(want)) problems.push(`does not exclude ${want}`)
  for (const keep of [
    'pnpm-lock.yaml',
    'package.json',
    'VERSION',
    'packages',
    'services',
    'tsconfig.json',
    'tsconfig.base.json',
  ])
    if (lines.includes(keep)) problems.push(`excludes ${keep}, which the build needs`)
  report(file, problems, 'excludes node_modules, dist, .git, var, .env; keeps the build inputs')
}
