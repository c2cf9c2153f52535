// Compose hardening (deploy/README.md, "Checks"): third-party images pinned by digest (and which
// ones: PostgreSQL 15, RabbitMQ 4, Redis 7), quorum queues, resource limits on every long-running
// container, Redis behind a password the gateway's REDIS_URL carries, no secret on a command line,
// no placeholder as a default value, and audit's checkpoints on a volume.
import { parseUrl } from './lib.mjs'
import { pinProblem, tagOf } from './images.mjs'

/** The third-party images, by service: the tag (without the digest) each must have. */
export const INFRA_IMAGES = {
  postgres: /^postgres:15(\.\d+)*(-[a-z]+)?$/,
  rabbitmq: /^rabbitmq:4\.\d+(\.\d+)?-management(-alpine)?$/,
  redis: /^redis:7(\.\d+)*(-[a-z]+)?$/,
}

/** Variables that hold secrets (as .env.example's check names them). */
const SECRET_NAME = /PASSWORD|SECRET|TOKEN|_KEYS?$/

/** The examples' placeholders (.env.example), which must never be what a container gets by default. */
const PLACEHOLDER = /change[-_]?me/i

/**
 * services: the interpolated `services:`; raw: the file before interpolation (its `services:`);
 * envOf(service) its environment as an object.
 */
export function checkComposeHardening(services, raw, envOf, problems) {
  // Images: built here (a build section, clinic/<name>:${TAG}), or pinned by digest.
  for (const [name, svc] of Object.entries(services)) {
    if (svc.build) {
      if (!/^clinic\/[a-z0-9-]+:[\w.-]+$/.test(svc.image ?? ''))
        problems.push(`${name}: image ${svc.image} (built here) must be clinic/<name>:\${TAG}`)
      continue
    }
    const pin = pinProblem(svc.image)
    if (pin) problems.push(`${name}: ${pin}`)
  }
  for (const [name, re] of Object.entries(INFRA_IMAGES))
    if (!re.test(tagOf(services[name]?.image)))
      problems.push(`${name}: image ${services[name]?.image} does not match ${re} (+ @sha256:<digest>)`)
  if (services['broker-users'] && services['broker-users'].image !== services.rabbitmq?.image)
    problems.push("broker-users: must run the broker's own image (its rabbitmqctl, its Erlang)")

  // Every long-running container with limits (a one-shot's restart is 'no').
  for (const [name, svc] of Object.entries(services)) {
    if ((svc.restart ?? 'no') === 'no') continue
    const limits = svc.deploy?.resources?.limits ?? {}
    for (const k of ['cpus', 'memory'])
      if (!limits[k])
        problems.push(`${name}: deploy.resources.limits.${k} not set (a long-running container)`)
  }

  // No secret on a command line: Compose interpolates ${VAR} into command, entrypoint and
  // healthcheck before the container starts, so the value would be in argv (process listings) and in
  // `docker inspect`. A secret goes in the environment ($$VAR leaves it to the container's shell).
  for (const [name, svc] of Object.entries(raw)) {
    for (const field of ['command', 'entrypoint', 'healthcheck']) {
      const value = field === 'healthcheck' ? svc.healthcheck?.test : svc[field]
      const text = []
        .concat(value ?? [])
        .join(' ')
        .replaceAll('$$', '')
      for (const [, v] of text.matchAll(/\$\{?([A-Za-z_][A-Za-z0-9_]*)/g))
        if (SECRET_NAME.test(v))
          problems.push(`${name}: ${field} interpolates ${v}: the secret would be on its command line`)
      if (/--requirepass\b/.test(text))
        problems.push(`${name}: ${field} has --requirepass: the password would be on its command line`)
    }
  }

  // Redis requires a password, from a config line its shell writes from the environment; its
  // healthcheck authenticates, the gateway's REDIS_URL carries it.
  const redis = services.redis
  if (redis) {
    const script = [].concat(redis.command ?? []).join('\n')
    const variable = /^\s*requirepass "?\$\{?(\w+)\}?"?\s*$/m.exec(script)?.[1]
    const password = variable ? String(envOf(redis)[variable] ?? '') : ''
    if (!password)
      problems.push(
        'redis: no `requirepass $VAR` config line with VAR in its environment (any container of the network could reach it)',
      )
    const test = [].concat(redis.healthcheck?.test ?? []).join(' ')
    if (!envOf(redis).REDISCLI_AUTH && !/\s-a\s|--pass\b|--askpass\b/.test(test))
      problems.push('redis: the healthcheck does not authenticate (REDISCLI_AUTH)')
    const url = parseUrl(envOf(services.gateway ?? {}).REDIS_URL)
    if (password && decodeURIComponent(url?.password ?? '') !== password)
      problems.push(
        'gateway: REDIS_URL does not carry the password redis requires (redis://:<password>@redis:6379)',
      )
  }

  // A placeholder is never a container's value by default (${VAR:-change-me...} or a literal).
  for (const [name, svc] of Object.entries(raw))
    for (const [k, v] of Object.entries(envOf(svc)))
      if (PLACEHOLDER.test(String(v).replace(/\$\{[A-Za-z0-9_]+:?\?[^}]*\}/g, '')))
        problems.push(`${name}: ${k} defaults to a placeholder (change-me...); require it: \${${k}:?...}`)

  // audit appends its checkpoints to a file on a volume (the root filesystem is read-only).
  const audit = services.audit
  if (audit) {
    const file = String(envOf(audit).AUDIT_CHECKPOINT_FILE ?? '')
    const mounts = []
      .concat(audit.volumes ?? [])
      .map((v) => (typeof v === 'string' ? { source: v.split(':')[0], target: v.split(':')[1] } : v))
    const onVolume = mounts.some((m) => m.target && file.startsWith(`${m.target.replace(/\/$/, '')}/`))
    if (!file.startsWith('/') || !onVolume)
      problems.push(`audit: AUDIT_CHECKPOINT_FILE (${file || 'unset'}) must be an absolute path on a volume`)
  }
}
