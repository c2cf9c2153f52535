'use strict'
// The one place that says how a service's names are made from its entry in services.json: env
// prefix, database login role and schema, broker user, image and variables. CommonJS with a .d.cts
// beside it, so the root scripts (ESM), service-env.cjs, the deploy checks, the gateway, the e2e
// stack and the Dockerfile all read this one copy. A name is lowercase words joined by `-`
// (`a-b`): SQL and env names take `_` for `-`, the broker user and the image keep it.
const list = require('./services.json')

const NAME = /^[a-z][a-z0-9]*(-[a-z0-9]+)*$/

/** Every process of the stack, the gateway first. */
const apps = [list.gateway, ...list.services]
/** The resource services (the gateway routes a path family to each). */
const resources = list.services

/** The entry of services.json of that name (a name not listed yet stands for an entry with no options). */
const entryOf = (service) =>
  typeof service === 'string' ? (apps.find((s) => s.name === service) ?? { name: service }) : service

/** `a-b` -> `A_B`: the prefix of the service's variables. */
function envPrefix(name) {
  if (!NAME.test(name)) throw new Error(`service name ${JSON.stringify(name)}: lowercase words joined by -`)
  return name.toUpperCase().replace(/-/g, '_')
}

/** `a-b` -> `a_b`: a name PostgreSQL takes unquoted. */
const sqlName = (name) => (envPrefix(name), name.replace(/-/g, '_'))

/**
 * DB_ROLE_PREFIX: empty (deploy's default, `npm start`), or lowercase letters, digits and `_` that
 * start with a letter and end in `_` (a test stack's `t<hex>_`, a `staging_` beside production).
 */
const DB_ROLE_PREFIX = /^([a-z][a-z0-9_]*_)?$/

/**
 * A stack's name of one of its database roles: its DB_ROLE_PREFIX before the role's own name (a
 * service's login role, or a NOLOGIN role its migrations grant to). Roles, and who is a member of
 * whom, are cluster-wide, so stacks sharing one PostgreSQL each prefix theirs: none uses, grants or
 * drops another's.
 */
function stackDbRole(role, prefix = '') {
  if (!DB_ROLE_PREFIX.test(prefix))
    throw new Error(
      `DB_ROLE_PREFIX ${JSON.stringify(prefix)}: empty, or lowercase letters, digits and _, starting with a letter and ending in _`,
    )
  const name = `${prefix}${role}`
  // PostgreSQL cuts longer names to 63 bytes: two roles could end up as one.
  if (name.length > 63) throw new Error(`database role ${name}: longer than PostgreSQL's 63 bytes`)
  return name
}

/** Every name of one service (an entry of services.json, or a name in it). */
function namesOf(service) {
  const s = entryOf(service)
  const prefix = envPrefix(s.name)
  const v = (what) => `${prefix}_${what}`
  return {
    name: s.name,
    envPrefix: prefix,
    /** Its own database login role (its migration makes it; it owns nothing). */
    loginRole: `clinic_${sqlName(s.name)}`,
    /** Its PostgreSQL schema (also the application_name of its connections). */
    schema: s.schema ?? sqlName(s.name),
    /** Its own RabbitMQ user (deploy/rabbitmq/definitions.json). */
    brokerUser: `clinic-${s.name}`,
    image: `clinic/${s.name}`,
    env: {
      port: v('PORT'),
      url: v('URL'),
      dbPassword: v('DB_PASSWORD'),
      amqpPassword: v('AMQP_PASSWORD'),
      amqpUrl: v('AMQP_URL'),
      databaseUrl: v('DATABASE_URL'),
    },
  }
}

/** The variable `what` (PORT, URL, ...) of a service: envName('a-b', 'URL') is A_B_URL. */
const envName = (service, what) => `${envPrefix(entryOf(service).name)}_${what}`

module.exports = { apps, resources, list, envPrefix, namesOf, envName, DB_ROLE_PREFIX, stackDbRole }
