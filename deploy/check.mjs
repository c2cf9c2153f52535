// Offline checks of the deployment files: no Docker engine, no cluster, no network.
// Run through deploy/check.sh. Prints one line per file checked ("ok" or "FAIL" with the reasons)
// and exits 1 if any check failed.
//
//   Dockerfile, .dockerignore   static checks (base image, pnpm pin, deploy --prod, non-root user,
//                               HEALTHCHECK, CMD), against the workspace's package.json files
//   deploy/compose/compose.yaml compose-spec JSON schema and lint rules (dclint), then the stack's
//                               own rules after ${VAR} interpolation with .env.example; plus
//                               `docker compose config` when the compose plugin is installed
//   deploy/k8s/*.yaml           type-checked against the Kubernetes API types (kubernetes-types +
//                               tsc: unknown fields, missing required fields, wrong types), then the
//                               deployment rules (probes, resources, securityContext, ...); plus
//                               `kubectl kustomize deploy/k8s` when kubectl is installed
import { spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import YAML from 'yaml'

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const require = createRequire(import.meta.url)
const rel = (p) => path.relative(root, p) || '.'
const read = (p) => readFileSync(path.join(root, p), 'utf8')

const SERVICES = ['gateway', 'patients', 'appointments', 'comms', 'audit']
const PORTS = { gateway: 8080, patients: 8081, appointments: 8082, comms: 8083, audit: 8084 }
const SCALED_IN_COMPOSE = ['patients', 'appointments', 'audit']

let failed = 0
/** One line per file: ok with what was checked, or FAIL with every problem found. */
function report(file, problems, what) {
  if (problems.length) {
    failed++
    console.log(`FAIL ${file}: ${problems.length} problem(s)`)
    for (const p of problems) console.log(`       - ${p}`)
  } else console.log(`ok   ${file} (${what})`)
}
function skip(what, why) {
  console.log(`skip ${what} (${why})`)
}
function has(cmd, args) {
  const r = spawnSync(cmd, args, { encoding: 'utf8' })
  return r.status === 0
}
const get = (obj, dotted) => dotted.split('.').reduce((o, k) => (o == null ? undefined : o[k]), obj)

// ------------------------------------------------------------------------------------------------
// Dockerfile
// ------------------------------------------------------------------------------------------------
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

function checkDockerfile() {
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
  const froms = ins
    .filter((i) => i.op === 'FROM')
    .map((i) => i.args.split(/\s+/)[0].replace(/^\$\{?NODE_IMAGE\}?$/, args.NODE_IMAGE ?? '?'))
  if (froms.length < 2) problems.push('expected a multi-stage build (build + runtime)')
  for (const f of froms) if (f !== 'node:24-slim') problems.push(`stage FROM ${f}: expected node:24-slim`)
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
  const cmd = runtime.filter((i) => i.op === 'CMD').pop()?.args
  if (!cmd) problems.push('runtime stage has no CMD')
  else if (JSON.stringify(JSON.parse(cmd)) !== JSON.stringify(['node', 'dist/server.js']))
    problems.push(`CMD ${cmd}: expected ["node","dist/server.js"]`)
  if (runtime.some((i) => i.op === 'ENV' && /\bNODE_ENV\b/.test(i.args)))
    problems.push('runtime sets NODE_ENV: the services must not rely on it')
  if (!runtime.some((i) => i.op === 'ENV' && /\bHOST=0\.0\.0\.0\b/.test(i.args)))
    problems.push('runtime must set HOST=0.0.0.0')

  // The image runs what the packages say they run.
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
  report(
    file,
    problems,
    `${froms.length} stages on node:24-slim, pnpm@${pnpmVersion}, USER ${user}, HEALTHCHECK, CMD`,
  )
}

function checkDockerignore() {
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

// ------------------------------------------------------------------------------------------------
// Compose
// ------------------------------------------------------------------------------------------------
function parseEnvFile(text) {
  const env = {}
  for (const line of text.split('\n')) {
    const m = /^\s*([A-Z_][A-Z0-9_]*)=(.*)$/.exec(line)
    if (m) env[m[1]] = m[2].trim()
  }
  return env
}

/** Compose interpolation: $$, $VAR, ${VAR}, ${VAR:-d}, ${VAR-d}, ${VAR:?e}, ${VAR?e}, ${VAR:+r}. */
function interpolate(text, env, problems) {
  return text.replace(
    /\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?+])((?:[^{}]|\{[^{}]*\})*))?\}|\$([A-Za-z_][A-Za-z0-9_]*)/g,
    (all, name, op, arg, bare) => {
      if (all === '$$') return '$'
      const n = name ?? bare
      const v = env[n]
      const unsetOrEmpty = v === undefined || v === ''
      switch (op) {
        case ':-':
          return unsetOrEmpty ? interpolate(arg, env, problems) : v
        case '-':
          return v === undefined ? interpolate(arg, env, problems) : v
        case ':?':
        case '?':
          if (op === ':?' ? unsetOrEmpty : v === undefined)
            problems.push(`required variable ${n} is not in .env.example (${arg})`)
          return v ?? ''
        case ':+':
          return unsetOrEmpty ? '' : interpolate(arg, env, problems)
        case '+':
          return v === undefined ? '' : interpolate(arg, env, problems)
        default:
          return v ?? ''
      }
    },
  )
}

function checkCompose() {
  const dir = 'deploy/compose'
  const file = `${dir}/compose.yaml`
  const envFile = `${dir}/.env.example`
  const problems = []
  if (!existsSync(path.join(root, file))) return report(file, ['missing'], '')

  // 2. The stack's own rules, on the file as Compose would see it with .env.example.
  const env = existsSync(path.join(root, envFile))
    ? parseEnvFile(read(envFile))
    : (problems.push(`${envFile} missing`), {})
  const text = interpolate(read(file), env, problems)

  // compose-spec JSON schema and lint rules (dclint bundles the schema), on the file as Compose
  // validates it: after interpolation (same line numbers as compose.yaml).
  const work = path.join(root, 'node_modules', '.cache', 'clinic-deploy-check', 'compose')
  mkdirSync(work, { recursive: true })
  writeFileSync(path.join(work, 'compose.yaml'), text)
  const dclint = spawnSync(
    process.execPath,
    [
      path.join(path.dirname(require.resolve('dclint/package.json')), 'bin', 'dclint.cjs'),
      path.join(work, 'compose.yaml'),
      '-c',
      `${dir}/dclint.json`,
    ],
    { cwd: root, encoding: 'utf8', env: { ...process.env, NO_COLOR: '1', FORCE_COLOR: '0' } },
  )
  rmSync(work, { recursive: true, force: true })
  if (dclint.status !== 0)
    problems.push(
      `dclint: ${(dclint.stdout + dclint.stderr)
        .split('\n')
        .map((l) => l.replace(/\x1b\[[0-9;]*m/g, '').trim())
        .filter((l) => l && !l.startsWith('/') && !l.startsWith('✖') && !/potentially fixable/.test(l))
        .join(' | ')}`,
    )

  let doc
  try {
    doc = YAML.parse(text, { merge: true, maxAliasCount: -1 })
  } catch (err) {
    return report(file, [...problems, `YAML: ${err.message}`], '')
  }
  const services = doc?.services ?? {}
  const images = {
    postgres: /^postgres:15(\.|$)/,
    rabbitmq: /^rabbitmq:3\.10(\.\d+)?-management$/,
    redis: /^redis:7(\.|$)/,
  }
  for (const [name, re] of Object.entries(images))
    if (!re.test(services[name]?.image ?? ''))
      problems.push(`${name}: image ${services[name]?.image} does not match ${re}`)
  for (const name of ['postgres', 'rabbitmq', 'redis'])
    if (!services[name]?.healthcheck?.test) problems.push(`${name}: no healthcheck`)

  const env0 = (svc) => {
    const e = svc?.environment ?? {}
    return Array.isArray(e)
      ? Object.fromEntries(e.map((kv) => [kv.split('=')[0], kv.split('=').slice(1).join('=')]))
      : e
  }
  const buildOf = (name, svc) => {
    const b = svc?.build
    if (!b) return problems.push(`${name}: no build section`)
    const ctx = path.resolve(root, dir, b.context ?? '.')
    if (ctx !== root) problems.push(`${name}: build context ${rel(ctx)} is not the repository root`)
    if (!existsSync(path.join(ctx, b.dockerfile ?? 'Dockerfile')))
      problems.push(`${name}: dockerfile ${b.dockerfile} not found`)
  }

  for (const s of SERVICES) {
    const svc = services[s]
    const mig = services[`migrate-${s}`]
    if (!svc) {
      problems.push(`service ${s} missing`)
      continue
    }
    buildOf(s, svc)
    if (svc.build?.args?.SERVICE !== s)
      problems.push(`${s}: build arg SERVICE is ${svc.build?.args?.SERVICE}`)
    const test = [].concat(svc.healthcheck?.test ?? []).join(' ')
    if (!test.includes(`:${PORTS[s]}/health/live`))
      problems.push(`${s}: healthcheck does not probe :${PORTS[s]}/health/live`)
    const e = env0(svc)
    for (const k of ['DATABASE_URL', 'AMQP_URL', 'INTERNAL_AUTH_SECRET', 'AMQP_QUEUE_TYPE'])
      if (!e[k]) problems.push(`${s}: ${k} not set`)
    if (e.HOST !== '0.0.0.0') problems.push(`${s}: HOST must be 0.0.0.0`)
    if (String(e[`${s.toUpperCase()}_PORT`]) !== String(PORTS[s]))
      problems.push(`${s}: ${s.toUpperCase()}_PORT is not ${PORTS[s]}`)
    if ((e.INTERNAL_AUTH_SECRET ?? '').length < 32)
      problems.push(`${s}: INTERNAL_AUTH_SECRET from .env.example is under 32 characters`)

    const deps = svc.depends_on ?? {}
    if (Array.isArray(deps)) problems.push(`${s}: depends_on must use conditions`)
    if (deps[`migrate-${s}`]?.condition !== 'service_completed_successfully')
      problems.push(`${s}: must depend on migrate-${s} with condition service_completed_successfully`)
    for (const infra of ['postgres', 'rabbitmq'])
      if (deps[infra]?.condition !== 'service_healthy')
        problems.push(`${s}: must depend on ${infra} being healthy`)
    for (const [dep, spec] of Object.entries(deps)) {
      if (!services[dep]) problems.push(`${s}: depends on unknown service ${dep}`)
      if (spec?.condition === 'service_healthy' && !services[dep]?.healthcheck)
        problems.push(`${s}: waits for ${dep} to be healthy, but ${dep} has no healthcheck`)
    }

    if (!mig) problems.push(`migrate-${s} missing`)
    else {
      buildOf(`migrate-${s}`, mig)
      if (mig.build?.args?.SERVICE !== s)
        problems.push(`migrate-${s}: build arg SERVICE is ${mig.build?.args?.SERVICE}`)
      if (mig.image !== svc.image)
        problems.push(`migrate-${s}: image ${mig.image} differs from ${s}'s ${svc.image}`)
      if (
        ![]
          .concat(mig.command ?? [])
          .join(' ')
          .includes('dist/db/migrate.js')
      )
        problems.push(`migrate-${s}: command does not run dist/db/migrate.js`)
      if (mig.restart && mig.restart !== 'no') problems.push(`migrate-${s}: a one-shot must not restart`)
      if (get(mig, 'depends_on.postgres.condition') !== 'service_healthy')
        problems.push(`migrate-${s}: must wait for postgres to be healthy`)
      const me = env0(mig)
      if (!me.DATABASE_URL || me.DATABASE_URL !== e.DATABASE_URL)
        problems.push(`migrate-${s}: DATABASE_URL differs from ${s}'s`)
    }
  }
  const g = env0(services.gateway)
  for (const s of SERVICES.slice(1))
    if (g[`${s.toUpperCase()}_URL`] !== `http://${s}:${PORTS[s]}`)
      problems.push(`gateway: ${s.toUpperCase()}_URL is not http://${s}:${PORTS[s]}`)
  if (!/^redis:\/\/redis:6379/.test(g.REDIS_URL ?? ''))
    problems.push('gateway: REDIS_URL must point at the redis service (shared rate limiter)')
  if (get(services, 'gateway.depends_on.redis.condition') !== 'service_healthy')
    problems.push('gateway: must wait for redis')

  for (const [name, svc] of Object.entries(services)) {
    const published = (svc.ports ?? []).length
    if (name === 'gateway') {
      const target = (svc.ports ?? []).map((p) =>
        typeof p === 'object' ? String(p.target) : String(p).split(':').pop(),
      )
      if (!target.includes('8080')) problems.push('gateway: port 8080 is not published')
    } else if (published) problems.push(`${name}: publishes ports; only the gateway may`)
  }
  for (const s of SCALED_IN_COMPOSE)
    if (!(get(services, `${s}.deploy.replicas`) >= 2))
      problems.push(`${s}: deploy.replicas must be 2 or more`)

  // 3. The real thing, when it is installed (it validates without an engine).
  let compose = ''
  if (has('docker', ['compose', 'version'])) {
    const r = spawnSync('docker', ['compose', '-f', file, '--env-file', envFile, 'config', '--quiet'], {
      cwd: root,
      encoding: 'utf8',
    })
    if (r.status !== 0) problems.push(`docker compose config: ${(r.stderr || r.stdout).trim()}`)
    compose = ', docker compose config'
  }
  report(
    file,
    problems,
    `compose-spec schema + lint (dclint), ${Object.keys(services).length} services, stack rules with .env.example${compose}`,
  )
  if (!compose) skip('docker compose config', 'the compose plugin is not installed here')
}

function checkEnvExample() {
  const file = 'deploy/compose/.env.example'
  if (!existsSync(path.join(root, file))) return
  const problems = []
  const env = parseEnvFile(read(file))
  const compose = read('deploy/compose/compose.yaml')
  const required = [...compose.matchAll(/\$\{([A-Z_][A-Z0-9_]*):?\?/g)].map((m) => m[1])
  for (const k of new Set(required))
    if (!(k in env)) problems.push(`${k} (required by compose.yaml) is not listed`)
  for (const [k, v] of Object.entries(env))
    if (/PASSWORD|SECRET|TOKEN/.test(k) && v && !/change-me/i.test(v))
      problems.push(`${k} looks like a real value: examples must be placeholders (change-me...)`)
  report(file, problems, `${Object.keys(env).length} variables, every required one listed, placeholders only`)
}

// ------------------------------------------------------------------------------------------------
// Kubernetes
// ------------------------------------------------------------------------------------------------
const K8S = 'deploy/k8s'
/** apiVersion -> module of kubernetes-types. */
const TYPES_MODULE = {
  v1: 'kubernetes-types/core/v1',
  'apps/v1': 'kubernetes-types/apps/v1',
  'batch/v1': 'kubernetes-types/batch/v1',
  'autoscaling/v2': 'kubernetes-types/autoscaling/v2',
  'policy/v1': 'kubernetes-types/policy/v1',
  'networking.k8s.io/v1': 'kubernetes-types/networking/v1',
}

function loadDocs(file, problems) {
  try {
    return YAML.parseAllDocuments(read(file)).flatMap((d) => {
      if (d.errors.length) {
        problems.push(...d.errors.map((e) => `YAML: ${e.message}`))
        return []
      }
      const js = d.toJS()
      return js == null ? [] : [js]
    })
  } catch (err) {
    problems.push(`YAML: ${err.message}`)
    return []
  }
}

/**
 * Type-checks every object against the Kubernetes API types: each object becomes a typed constant in
 * its own .ts file, and tsc reports unknown fields (excess property checks), missing required fields
 * and wrong types. Returns problems keyed by "<file>#<n>".
 */
function typeCheck(objects) {
  const ts = require('typescript')
  const work = path.join(root, 'node_modules', '.cache', 'clinic-deploy-check')
  rmSync(work, { recursive: true, force: true })
  mkdirSync(work, { recursive: true })
  const byFile = new Map()
  const files = []
  objects.forEach(({ file, index, obj }, n) => {
    const key = `${file}#${index + 1}`
    const mod = TYPES_MODULE[obj?.apiVersion]
    if (!mod) {
      byFile.set(key, [`apiVersion ${obj?.apiVersion} (${obj?.kind}) is not one this check knows`])
      return
    }
    const f = path.join(work, `m${n}.ts`)
    writeFileSync(
      f,
      `import type { ${obj.kind} } from '${mod}'\nexport const m: ${obj.kind} = ${JSON.stringify(obj, null, 2)}\n`,
    )
    files.push([f, key])
  })
  const program = ts.createProgram(
    files.map(([f]) => f),
    {
      strict: true,
      noEmit: true,
      types: [],
      module: ts.ModuleKind.CommonJS,
      moduleResolution: ts.ModuleResolutionKind.Node10,
      skipLibCheck: true,
    },
  )
  const keyOf = new Map(files.map(([f, k]) => [path.resolve(f), k]))
  for (const d of ts.getPreEmitDiagnostics(program)) {
    const key = d.file ? keyOf.get(path.resolve(d.file.fileName)) : undefined
    const where = d.file && d.start !== undefined ? d.file.getLineAndCharacterOfPosition(d.start).line : 0
    const near = d.file ? d.file.text.split('\n')[where].trim() : ''
    const msg = ts.flattenDiagnosticMessageText(d.messageText, ' ').replace(/\s+/g, ' ')
    const list = byFile.get(key ?? 'typescript') ?? []
    list.push(`${msg.slice(0, 300)}${near ? ` (at ${near.slice(0, 60)})` : ''}`)
    byFile.set(key ?? 'typescript', list)
  }
  rmSync(work, { recursive: true, force: true })
  return byFile
}

function checkDeployment(d, ctx, problems) {
  const name = d.metadata?.name
  const spec = d.spec ?? {}
  const pod = spec.template?.spec ?? {}
  const port = PORTS[name]
  if (!SERVICES.includes(name)) problems.push(`Deployment ${name}: not one of the services`)
  if (!(spec.replicas >= 2)) problems.push(`Deployment ${name}: replicas must be 2 or more`)
  const sel = spec.selector?.matchLabels ?? {}
  const labels = spec.template?.metadata?.labels ?? {}
  if (!Object.keys(sel).length || Object.entries(sel).some(([k, v]) => labels[k] !== v))
    problems.push(`Deployment ${name}: selector does not match the pod labels`)
  if (!pod.topologySpreadConstraints?.length)
    problems.push(`Deployment ${name}: no topologySpreadConstraints`)
  for (const t of pod.topologySpreadConstraints ?? [])
    if (Object.entries(t.labelSelector?.matchLabels ?? {}).some(([k, v]) => labels[k] !== v))
      problems.push(`Deployment ${name}: a topology spread selector does not match its pods`)
  const psc = pod.securityContext ?? {}
  if (psc.runAsNonRoot !== true || !(psc.runAsUser > 0))
    problems.push(`Deployment ${name}: pod securityContext must set runAsNonRoot and a non-zero runAsUser`)
  if (!(pod.terminationGracePeriodSeconds > 5))
    problems.push(`Deployment ${name}: terminationGracePeriodSeconds must leave time after the preStop sleep`)

  const all = [...(pod.initContainers ?? []), ...(pod.containers ?? [])]
  const image = `clinic/${name}`
  const mainC = (pod.containers ?? []).find((c) => c.name === name)
  if (!mainC) problems.push(`Deployment ${name}: no container named ${name}`)
  const migrate = [...(pod.initContainers ?? [])].find((c) =>
    (c.command ?? []).join(' ').includes('dist/db/migrate.js'),
  )
  if (!migrate) problems.push(`Deployment ${name}: no initContainer running dist/db/migrate.js (migrations)`)
  const volumes = new Set((pod.volumes ?? []).map((v) => v.name))
  for (const c of all) {
    const where = `Deployment ${name} container ${c.name}`
    if (c.image !== image)
      problems.push(`${where}: image ${c.image}, expected ${image} (tagged by kustomization images)`)
    const sc = c.securityContext ?? {}
    if (sc.readOnlyRootFilesystem !== true) problems.push(`${where}: readOnlyRootFilesystem must be true`)
    if (sc.allowPrivilegeEscalation !== false)
      problems.push(`${where}: allowPrivilegeEscalation must be false`)
    if (!(sc.capabilities?.drop ?? []).includes('ALL')) problems.push(`${where}: must drop ALL capabilities`)
    for (const k of ['requests.cpu', 'requests.memory', 'limits.memory'])
      if (!get(c.resources, k)) problems.push(`${where}: resources.${k} not set`)
    for (const m of c.volumeMounts ?? [])
      if (!volumes.has(m.name)) problems.push(`${where}: mounts unknown volume ${m.name}`)
    for (const ef of c.envFrom ?? []) {
      if (ef.configMapRef && !ctx.configMaps.has(ef.configMapRef.name))
        problems.push(`${where}: ConfigMap ${ef.configMapRef.name} is not defined`)
      if (ef.secretRef)
        problems.push(`${where}: envFrom a whole Secret; reference the keys it needs one by one`)
    }
    const envNames = new Set([
      ...(c.env ?? []).map((e) => e.name),
      ...(c.envFrom ?? []).flatMap((ef) => [...(ctx.configMaps.get(ef.configMapRef?.name) ?? [])]),
    ])
    for (const e of c.env ?? []) {
      const ref = e.valueFrom?.secretKeyRef
      if (ref && (ref.name !== ctx.secretName || !ctx.secretKeys.has(ref.key)))
        problems.push(`${where}: secret ${ref.name}/${ref.key} is not in secret.example.yaml`)
    }
    for (const k of [
      'DATABASE_URL',
      'AMQP_URL',
      'INTERNAL_AUTH_SECRET',
      'HOST',
      `${name.toUpperCase()}_PORT`,
    ])
      if (!envNames.has(k)) problems.push(`${where}: ${k} not provided`)
  }
  if (mainC) {
    const where = `Deployment ${name}`
    const named = Object.fromEntries((mainC.ports ?? []).map((p) => [p.name, p.containerPort]))
    if (named.http !== port) problems.push(`${where}: container port "http" must be ${port}`)
    const probe = (p) => `${get(mainC, `${p}.httpGet.path`)}@${get(mainC, `${p}.httpGet.port`)}`
    if (probe('livenessProbe') !== '/health/live@http')
      problems.push(`${where}: livenessProbe must GET /health/live on port http`)
    if (probe('readinessProbe') !== '/health/ready@http')
      problems.push(`${where}: readinessProbe must GET /health/ready on port http`)
    const pre = mainC.lifecycle?.preStop
    if (!pre?.sleep && !(pre?.exec?.command ?? []).includes('sleep'))
      problems.push(`${where}: no preStop sleep (draining)`)
    if (name === 'gateway' && !(mainC.env ?? []).some((e) => e.name === 'REDIS_URL'))
      problems.push('Deployment gateway: REDIS_URL (shared rate limiter) not provided')
  }
}

function checkK8s() {
  const kfile = `${K8S}/kustomization.yaml`
  const kproblems = []
  if (!existsSync(path.join(root, kfile))) return report(kfile, ['missing'], '')
  const kust = loadDocs(kfile, kproblems)[0] ?? {}
  const resources = kust.resources ?? []
  for (const r of resources)
    if (!existsSync(path.join(root, K8S, r))) kproblems.push(`resource ${r} not found`)
  const yamlFiles = readdirSync(path.join(root, K8S)).filter(
    (f) => /\.ya?ml$/.test(f) && f !== 'kustomization.yaml',
  )
  for (const f of yamlFiles)
    if (f !== 'secret.example.yaml' && !resources.includes(f))
      kproblems.push(`${f} is not listed in resources`)
  if (resources.includes('secret.example.yaml'))
    kproblems.push('secret.example.yaml must not be applied (placeholders would overwrite the real Secret)')
  if (kust.namespace !== 'clinic') kproblems.push('namespace must be clinic')
  const version = read('VERSION').trim()
  const imgs = new Map((kust.images ?? []).map((i) => [i.name, i]))
  for (const s of SERVICES) {
    const i = imgs.get(`clinic/${s}`)
    if (!i) kproblems.push(`images: no entry for clinic/${s}`)
    else if (!/^\d{6}\.\d{2}$/.test(String(i.newTag ?? '')))
      kproblems.push(`images: clinic/${s} newTag ${i.newTag} is not a CalVer release`)
  }

  // Load every object (the Secret example too), remember which file it came from.
  const perFile = new Map()
  const objects = []
  for (const f of [...yamlFiles].sort()) {
    const problems = []
    const docs = loadDocs(`${K8S}/${f}`, problems)
    perFile.set(f, { problems, docs })
    docs.forEach((obj, index) => objects.push({ file: f, index, obj }))
  }
  const typeProblems = typeCheck(objects)
  for (const [key, list] of typeProblems) {
    const f = key.split('#')[0]
    const target = perFile.get(f)?.problems ?? kproblems
    target.push(...list.map((m) => `${key.includes('#') ? `document ${key.split('#')[1]}: ` : ''}${m}`))
  }

  const all = objects.map((o) => o.obj)
  const secret = all.find((o) => o.kind === 'Secret')
  const ctx = {
    configMaps: new Map(
      all
        .filter((o) => o.kind === 'ConfigMap')
        .map((o) => [o.metadata?.name, new Set(Object.keys(o.data ?? {}))]),
    ),
    secretName: secret?.metadata?.name,
    secretKeys: new Set(Object.keys({ ...(secret?.stringData ?? {}), ...(secret?.data ?? {}) })),
  }
  const deployments = new Map(all.filter((o) => o.kind === 'Deployment').map((o) => [o.metadata?.name, o]))
  const podLabels = (name) => deployments.get(name)?.spec?.template?.metadata?.labels ?? {}
  const selects = (selector, labels) =>
    Object.keys(selector ?? {}).length > 0 && Object.entries(selector).every(([k, v]) => labels[k] === v)
  const kinds = {}

  for (const [f, { problems, docs }] of perFile) {
    for (const o of docs) {
      const kind = o.kind
      const name = o.metadata?.name
      kinds[kind] = (kinds[kind] ?? 0) + 1
      if (o.metadata?.namespace && o.metadata.namespace !== 'clinic')
        problems.push(`${kind} ${name}: namespace ${o.metadata.namespace}`)
      if (kind === 'Deployment') checkDeployment(o, ctx, problems)
      if (kind === 'Service') {
        const target = [...deployments.keys()].find((d) => selects(o.spec?.selector, podLabels(d)))
        if (!target) problems.push(`Service ${name}: selects no Deployment's pods`)
        if (o.spec?.type && o.spec.type !== 'ClusterIP')
          problems.push(`Service ${name}: type ${o.spec.type}; only the Ingress is exposed`)
        const cports = (deployments.get(target)?.spec?.template?.spec?.containers ?? []).flatMap(
          (c) => c.ports ?? [],
        )
        for (const p of o.spec?.ports ?? [])
          if (!cports.some((c) => c.name === p.targetPort || c.containerPort === p.targetPort))
            problems.push(`Service ${name}: targetPort ${p.targetPort} is no container port`)
        if (target && o.spec?.ports?.[0]?.port !== PORTS[target])
          problems.push(`Service ${name}: port must be ${PORTS[target]} (the *_URL in the ConfigMap)`)
      }
      if (kind === 'HorizontalPodAutoscaler') {
        const ref = o.spec?.scaleTargetRef
        if (ref?.kind !== 'Deployment' || !deployments.has(ref?.name))
          problems.push(`HPA ${name}: scales unknown ${ref?.kind} ${ref?.name}`)
        if (!(o.spec?.minReplicas >= 2)) problems.push(`HPA ${name}: minReplicas must be 2 or more`)
        if (!(o.spec?.maxReplicas >= o.spec?.minReplicas))
          problems.push(`HPA ${name}: maxReplicas below minReplicas`)
        if (!(o.spec?.metrics ?? []).length) problems.push(`HPA ${name}: no metrics`)
      }
      if (kind === 'PodDisruptionBudget') {
        if (![...deployments.keys()].some((d) => selects(o.spec?.selector?.matchLabels, podLabels(d))))
          problems.push(`PDB ${name}: selects no Deployment's pods`)
        if (o.spec?.minAvailable === undefined && o.spec?.maxUnavailable === undefined)
          problems.push(`PDB ${name}: neither minAvailable nor maxUnavailable`)
      }
      if (kind === 'Ingress') {
        const backends = (o.spec?.rules ?? [])
          .flatMap((r) => r.http?.paths ?? [])
          .map((p) => p.backend?.service?.name)
        if (!backends.length || backends.some((b) => b !== 'gateway'))
          problems.push(`Ingress ${name}: must route to the gateway only (routes to ${backends.join(', ')})`)
      }
      if (kind === 'Secret') {
        if (f !== 'secret.example.yaml')
          problems.push(`Secret ${name}: secrets do not belong in the applied manifests`)
        for (const [k, v] of Object.entries(o.stringData ?? {}))
          if (!/CHANGE_ME|X{8,}/.test(String(v)))
            problems.push(`Secret ${name}: ${k} is not a placeholder (use CHANGE_ME)`)
        if (o.data) problems.push(`Secret ${name}: use stringData placeholders, not data`)
      }
      if (kind === 'ConfigMap') {
        for (const k of Object.keys(o.data ?? {}))
          if (
            /SECRET|PASSWORD|TOKEN(?!_CACHE)|_AUTH_/.test(k) ||
            (/_URL$/.test(k) && /:\/\/[^/]*:[^/]*@/.test(o.data[k]))
          )
            problems.push(`ConfigMap ${name}: ${k} looks secret`)
        if (o.data?.AMQP_QUEUE_TYPE !== 'quorum')
          problems.push(`ConfigMap ${name}: AMQP_QUEUE_TYPE must be quorum (RabbitMQ cluster)`)
      }
    }
  }
  for (const s of SERVICES) {
    const objs = all.filter((o) => o.metadata?.name === s)
    for (const k of ['Deployment', 'Service', 'HorizontalPodAutoscaler', 'PodDisruptionBudget'])
      if (!objs.some((o) => o.kind === k)) kproblems.push(`${s}: no ${k}`)
  }
  if (all.filter((o) => o.kind === 'Ingress').length !== 1)
    kproblems.push('expected exactly one Ingress (the gateway)')
  if (!all.some((o) => o.kind === 'Namespace' && o.metadata?.name === 'clinic'))
    kproblems.push('no Namespace clinic')

  // Every variable a service's config.ts declares should get its value from the ConfigMap or the Secret
  // (a note, not a failure: declared variables all have defaults or are checked above).
  const supplied = new Set([...[...ctx.configMaps.values()].flatMap((k) => [...k]), ...ctx.secretKeys])
  const declared = new Set(
    [
      ...SERVICES.map((s) => path.join(root, 'services', s, 'src', 'config.ts')),
      path.join(root, 'packages', 'platform', 'src', 'service.ts'), // the variables every service shares
    ].flatMap((f) => {
      return existsSync(f)
        ? [...readFileSync(f, 'utf8').matchAll(/^\s+([A-Z][A-Z0-9_]+):\s*(?:v\.|upstream\()/gm)].map(
            (m) => m[1],
          )
        : []
    }),
  )
  const unsupplied = [...declared].filter((k) => !supplied.has(k))
  if (unsupplied.length)
    console.log(
      `note ${K8S}: not in the ConfigMap or Secret (service default applies): ${unsupplied.join(', ')}`,
    )

  for (const [f, { problems, docs }] of perFile)
    report(`${K8S}/${f}`, problems, `${docs.map((d) => d.kind).join(', ')}: API types + rules`)

  // Render with kustomize, as `kubectl apply -k` would.
  let rendered = ''
  if (has('kubectl', ['version', '--client'])) {
    const r = spawnSync('kubectl', ['kustomize', K8S], { cwd: root, encoding: 'utf8' })
    if (r.status !== 0) kproblems.push(`kubectl kustomize: ${r.stderr.trim()}`)
    else {
      const out = YAML.parseAllDocuments(r.stdout).map((d) => d.toJS())
      for (const o of out) {
        if (o.kind !== 'Namespace' && o.metadata?.namespace !== 'clinic')
          kproblems.push(`rendered ${o.kind} ${o.metadata?.name} is not in namespace clinic`)
        for (const c of [
          ...(o.spec?.template?.spec?.initContainers ?? []),
          ...(o.spec?.template?.spec?.containers ?? []),
        ])
          if (!/:\d{6}\.\d{2}$/.test(c.image))
            kproblems.push(`rendered ${o.metadata?.name}/${c.name}: image ${c.image} has no release tag`)
      }
      rendered = `, kubectl kustomize renders ${out.length} objects`
    }
  }
  const tags = new Set((kust.images ?? []).map((i) => String(i.newTag)))
  const note =
    tags.size === 1 && !tags.has(version)
      ? ` [note: image tag ${[...tags][0]} is not VERSION ${version}]`
      : ''
  report(
    kfile,
    kproblems,
    `${resources.length} resources, ${Object.entries(kinds)
      .map(([k, n]) => `${n} ${k}`)
      .join(', ')}${rendered}${note}`,
  )
  if (!rendered) skip('kubectl kustomize', 'kubectl is not installed here')
}

checkDockerfile()
checkDockerignore()
checkCompose()
checkEnvExample()
checkK8s()
if (failed) {
  console.log(`deploy checks: ${failed} file(s) failed`)
  process.exit(1)
}
console.log('deploy checks: all passed')
