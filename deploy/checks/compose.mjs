// deploy/compose/compose.yaml: the compose-spec JSON schema and lint rules (dclint), then the stack's
// own rules after ${VAR} interpolation with .env.example, against packages/platform/services.json
// (database roles: compose-db.mjs; broker users and event keys: compose-broker.mjs; comms' providers:
// comms-delivery.mjs; images pinned, quorum queues, limits, Redis's password, placeholders:
// compose-hardening.mjs; assertion keys: assertion-keys.mjs); plus `docker compose config` when the
// compose plugin is installed.
import { spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import YAML from 'yaml'
import {
  APPS,
  PORTS,
  RESOURCES,
  SERVICES,
  envName,
  get,
  has,
  read,
  rel,
  report,
  require,
  requiredVars,
  root,
  skip,
} from './lib.mjs'
import { checkComposeAssertionKeys } from './assertion-keys.mjs'
import { checkBrokerUsers } from './compose-broker.mjs'
import { checkComposeHardening } from './compose-hardening.mjs'
import { checkComposeDelivery } from './comms-delivery.mjs'
import { checkDatabaseRoles } from './compose-db.mjs'
import { interpolate, parseEnvFile } from './compose-env.mjs'

export function checkCompose() {
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
  const work = path.join(root, 'node_modules', '.cache', 'clinic-deploy-check', `compose-${process.pid}`)
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
    for (const k of ['DATABASE_URL', 'AMQP_URL']) if (!e[k]) problems.push(`${s}: ${k} not set`)
    for (const k of requiredVars(s))
      if (!e[k]) problems.push(`${s}: ${k} (required by services/${s}/src/config.ts) not set`)
    if (e.HOST !== '0.0.0.0') problems.push(`${s}: HOST must be 0.0.0.0`)
    if (String(e[envName(s, 'PORT')]) !== String(PORTS[s]))
      problems.push(`${s}: ${envName(s, 'PORT')} is not ${PORTS[s]}`)
    // The broker vouches for an event's origin: a key that signs events would let its holder speak
    // for another service.
    for (const k of ['EVENT_SIGNING_SECRET', 'EVENT_VERIFY_KEYS'])
      if (e[k] !== undefined) problems.push(`${s}: ${k} is no longer given to any service`)

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
    }
  }
  checkDatabaseRoles(services, env0, problems)
  checkBrokerUsers(services, env0, problems)
  const rawServices = YAML.parse(read(file), { merge: true, maxAliasCount: -1 })?.services ?? {}
  // Images pinned, quorum queues, limits, Redis's password, no placeholder by default, audit's volume.
  checkComposeHardening(services, rawServices, env0, problems)
  checkComposeAssertionKeys(services, rawServices, env0, problems)
  // comms names its providers, as required settings; never COMMS_DELIVERY=files (comms-delivery.mjs).
  checkComposeDelivery(
    Object.fromEntries(Object.keys(services).map((n) => [n, env0(rawServices[n])])),
    Object.fromEntries(Object.entries(services).map(([n, svc]) => [n, env0(svc)])),
    problems,
  )
  const g = env0(services.gateway)
  for (const s of RESOURCES)
    if (g[envName(s, 'URL')] !== `http://${s}:${PORTS[s]}`)
      problems.push(`gateway: ${envName(s, 'URL')} is not http://${s}:${PORTS[s]}`)
  if (!/^redis:\/\/([^@/]*@)?redis:6379/.test(g.REDIS_URL ?? ''))
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
  for (const s of APPS.filter((a) => a.name !== 'gateway'))
    if (get(services, `${s.name}.deploy.replicas`) !== s.replicas.min)
      problems.push(`${s.name}: deploy.replicas must be ${s.replicas.min} (services.json replicas.min)`)

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
