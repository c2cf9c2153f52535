'use strict'
// One service's environment in a local stack (`npm start`, the benches, the e2e stack). The given
// DATABASE_URL is the owner's, kept as MIGRATION_DATABASE_URL for the migrations; the service logs
// in as its own role (naming.cjs: `clinic_<name>`, same host, database and password), which its
// migration step makes and which owns nothing. Each signs its events with a key of its own, derived
// from EVENT_SIGNING_SECRET; a service that consumes other services' events (audit, webhooks) checks
// each source with that source's key (EVENT_VERIFY_KEYS), so no service can sign as another.
// CommonJS, so that the scripts (ESM) and the e2e stack (TypeScript under Jest) share this one copy.
const { createHmac } = require('node:crypto')
const { apps, namesOf } = require('../packages/platform/naming.cjs')

/** Does the AMQP topic binding (`*` one word, `#` zero or more) match the routing key? */
function topicMatches(binding, key) {
  const match = (b, k) => {
    if (!b.length) return !k.length
    if (b[0] === '#') return match(b.slice(1), k) || (k.length > 0 && match(b, k.slice(1)))
    return k.length > 0 && (b[0] === '*' || b[0] === k[0]) && match(b.slice(1), k.slice(1))
  }
  return match(binding.split('.'), key.split('.'))
}

/**
 * The services whose queues (services.json `consumes`) receive events another service publishes:
 * audit and webhooks. Each checks every event with its source's key, so each gets EVENT_VERIFY_KEYS
 * (every app's key) here, in Compose and in its Kubernetes patch; no other service does.
 */
const eventVerifiers = apps
  .filter((s) =>
    (s.consumes ?? []).some((c) =>
      c.bindings.some((b) =>
        apps.some((o) => o.name !== s.name && (o.publishes ?? []).some((t) => topicMatches(b, t))),
      ),
    ),
  )
  .map((s) => s.name)

function serviceEnv(name, env, ownerUrl = env.DATABASE_URL) {
  const login = new URL(ownerUrl)
  login.username = namesOf(name).loginRole
  const out = { ...env, DATABASE_URL: login.toString(), MIGRATION_DATABASE_URL: ownerUrl }
  const secret = env.EVENT_SIGNING_SECRET
  if (!secret) return out
  const keyOf = (s) => createHmac('sha256', secret).update(`clinic-events:${s}`).digest('hex')
  out.EVENT_SIGNING_SECRET = keyOf(name)
  if (eventVerifiers.includes(name))
    out.EVENT_VERIFY_KEYS = apps.map((s) => `${s.name}=${keyOf(s.name)}`).join(',')
  return out
}

module.exports = { serviceEnv, eventVerifiers, topicMatches }
