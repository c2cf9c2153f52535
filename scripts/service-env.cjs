'use strict'
// One service's environment in a local stack (`npm start`, the benches, the e2e stack). The given
// DATABASE_URL is the owner's, kept as MIGRATION_DATABASE_URL for the migrations; the service logs
// in as its own role (naming.cjs: `<DB_ROLE_PREFIX>clinic_<name>`, same host, database and
// password), which its migration step makes and which owns nothing. DB_ROLE_PREFIX goes on to the
// service, whose migrations grant to `<DB_ROLE_PREFIX><role>` and which runs as that role: a test
// stack's prefix is its own, so stacks on one PostgreSQL share no role. It logs in to the broker as
// its own user too (packages/platform/broker-users.cjs: `<BROKER_USER_PREFIX>clinic-<name>`, its
// password derived from BROKER_ROOT_SECRET, which reaches no process), so the broker vouches for the
// origin of its events.
// CommonJS, so that the scripts (ESM) and the e2e stack (TypeScript under Jest) share this one copy.
const { createHmac, createPrivateKey, createPublicKey } = require('node:crypto')
const { apps, namesOf, stackDbRole } = require('../packages/platform/naming.cjs')

// The fixed DER prefix of an Ed25519 PKCS#8 private key; the 32-byte seed follows (RFC 8410).
const PKCS8_ED25519 = Buffer.from('302e020100300506032b657004220420', 'hex')

/**
 * The Ed25519 key pair of `issuer` (`gateway` or a service) derived from the local stack's
 * ASSERTION_ROOT_SECRET, as base64url DER (packages/platform/src/assertion-keys.ts reads them).
 */
function assertionKeyPair(rootSecret, issuer) {
  const seed = createHmac('sha256', rootSecret).update(`clinic-assertions:${issuer}`).digest()
  const privateDer = Buffer.concat([PKCS8_ED25519, seed])
  const key = createPrivateKey({ key: privateDer, format: 'der', type: 'pkcs8' })
  const publicDer = createPublicKey(key).export({ format: 'der', type: 'spki' })
  return { privateKey: privateDer.toString('base64url'), publicKey: publicDer.toString('base64url') }
}

/** The services that call `name` over signed internal HTTP (services.json `calls`). */
const callersOf = (name) => apps.filter((s) => (s.calls ?? []).includes(name)).map((s) => s.name)

/**
 * A process's assertion keys from the root secret: the gateway's private key to the gateway alone,
 * its public key to every service, a calling service its own private key, a called service its
 * callers' public keys. The root secret itself reaches no process.
 */
function assertionEnv(name, rootSecret) {
  const out = {}
  const gateway = assertionKeyPair(rootSecret, 'gateway')
  if (name === 'gateway') out.GATEWAY_SIGNING_KEY = gateway.privateKey
  else out.GATEWAY_VERIFY_KEY = gateway.publicKey
  const app = apps.find((s) => s.name === name)
  if ((app?.calls ?? []).length) out.SERVICE_SIGNING_KEY = assertionKeyPair(rootSecret, name).privateKey
  const callers = callersOf(name)
  if (callers.length)
    out.SERVICE_VERIFY_KEYS = callers
      .map((c) => `${c}=${assertionKeyPair(rootSecret, c).publicKey}`)
      .join(',')
  return out
}

function serviceEnv(name, env, ownerUrl = env.DATABASE_URL) {
  const login = new URL(ownerUrl)
  login.username = stackDbRole(namesOf(name).loginRole, env.DB_ROLE_PREFIX ?? '')
  const out = { ...env, DATABASE_URL: login.toString(), MIGRATION_DATABASE_URL: ownerUrl }
  delete out.ASSERTION_ROOT_SECRET
  if (name !== 'gateway') delete out.GATEWAY_SIGNING_KEY
  if (env.ASSERTION_ROOT_SECRET) Object.assign(out, assertionEnv(name, env.ASSERTION_ROOT_SECRET))
  delete out.BROKER_ROOT_SECRET
  // A variable left from before the broker vouched for origins: no process gets an event key.
  delete out.EVENT_SIGNING_SECRET
  delete out.EVENT_VERIFY_KEYS
  delete out.BROKER_USER_PREFIX
  // Required here, not at the top: the deploy checks and generators load this file without it.
  if (env.BROKER_ROOT_SECRET && env.AMQP_URL)
    out.AMQP_URL = require('../packages/platform/broker-users.cjs').stackAmqpUrl(env.AMQP_URL, name, {
      prefix: env.BROKER_USER_PREFIX ?? '',
      rootSecret: env.BROKER_ROOT_SECRET,
    })
  return out
}

module.exports = { serviceEnv, assertionKeyPair }
