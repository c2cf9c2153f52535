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

module.exports = { apps, resources, list, envPrefix, namesOf, envName }
