'use strict'
// One service's environment in a local stack (`npm start`, the benches, the e2e stack). The given
// DATABASE_URL is the owner's, kept as MIGRATION_DATABASE_URL for the migrations; the service logs
// in as its own role (naming.cjs: `clinic_<name>`, same host, database and password), which its
// migration step makes and which owns nothing. Each signs its events with a key of its own, derived
// from EVENT_SIGNING_SECRET; audit checks each source with that source's key (EVENT_VERIFY_KEYS), so
// no service can sign as another. CommonJS, so that the scripts (ESM) and the e2e stack (TypeScript
// under Jest) share this one copy.
const { createHmac } = require('node:crypto')
const { apps, namesOf } = require('../packages/platform/naming.cjs')

function serviceEnv(name, env, ownerUrl = env.DATABASE_URL) {
  const login = new URL(ownerUrl)
  login.username = namesOf(name).loginRole
  const out = { ...env, DATABASE_URL: login.toString(), MIGRATION_DATABASE_URL: ownerUrl }
  const secret = env.EVENT_SIGNING_SECRET
  if (!secret) return out
  const keyOf = (s) => createHmac('sha256', secret).update(`clinic-events:${s}`).digest('hex')
  out.EVENT_SIGNING_SECRET = keyOf(name)
  if (name === 'audit') out.EVENT_VERIFY_KEYS = apps.map((s) => `${s.name}=${keyOf(s.name)}`).join(',')
  return out
}

module.exports = { serviceEnv }
