// Broker users and event keys in Compose: each service logs in to RabbitMQ as its own user
// clinic-<name> (deploy/rabbitmq/definitions.json: it may publish only its own routing keys) on the
// vhost `clinic`, whose password the one-shot broker-users sets (deploy/rabbitmq/users.sh) before
// any service starts; each signs its events with a key of its own, and the services that consume
// others' events (audit, webhooks) check each source with that source's key (EVENT_VERIFY_KEYS).
import { SERVICES, envName, eventVerifiers, get, namesOf, parseUrl, read } from './lib.mjs'

/** services: the interpolated `services:`; envOf(service) its environment as an object. */
export function checkBrokerUsers(services, envOf, problems) {
  const definitions = JSON.parse(read('deploy/rabbitmq/definitions.json'))
  const declared = new Set(definitions.users.map((u) => u.name))
  const setup = services['broker-users']
  const setupEnv = setup ? envOf(setup) : {}
  if (!setup) problems.push('broker-users (the one-shot that sets the broker users) missing')
  else {
    if ((setup.restart ?? 'no') !== 'no') problems.push('broker-users: a one-shot must not restart')
    if (
      !`${[].concat(setup.entrypoint ?? []).join(' ')} ${[].concat(setup.command ?? []).join(' ')}`.includes(
        'users.sh',
      )
    )
      problems.push('broker-users: does not run deploy/rabbitmq/users.sh')
    if (get(setup, 'depends_on.rabbitmq.condition') !== 'service_healthy')
      problems.push('broker-users: must wait for rabbitmq to be healthy')
  }

  const keys = new Map()
  for (const s of SERVICES) {
    const svc = services[s]
    if (!svc) continue
    const e = envOf(svc)
    const user = namesOf(s).brokerUser
    const url = parseUrl(e.AMQP_URL)
    if (!url) problems.push(`${s}: AMQP_URL not set`)
    else {
      if (decodeURIComponent(url.username) !== user)
        problems.push(`${s}: AMQP_URL logs in as ${url.username}, not ${user}`)
      if (url.pathname !== '/clinic') problems.push(`${s}: AMQP_URL vhost is ${url.pathname}, not /clinic`)
      if (!declared.has(user))
        problems.push(`${s}: ${user} is not a user of deploy/rabbitmq/definitions.json`)
      const password = setupEnv[envName(s, 'AMQP_PASSWORD')]
      if (setup && (!password || decodeURIComponent(url.password) !== String(password)))
        problems.push(
          `${s}: broker-users does not set the password of its AMQP_URL (${envName(s, 'AMQP_PASSWORD')})`,
        )
    }
    if (setup && get(svc, 'depends_on.broker-users.condition') !== 'service_completed_successfully')
      problems.push(`${s}: must start after broker-users completed successfully`)
    const key = String(e.EVENT_SIGNING_SECRET ?? '')
    if ([...keys.values()].includes(key)) problems.push(`${s}: EVENT_SIGNING_SECRET is another service's`)
    keys.set(s, key)
  }

  // Audit and webhooks verify each source with that source's key: exactly the keys the services sign
  // with. No other service gets them.
  for (const [name, svc] of Object.entries(services)) {
    const verify = String(envOf(svc).EVENT_VERIFY_KEYS ?? '')
    if (!eventVerifiers.includes(name)) {
      if (verify) problems.push(`${name}: EVENT_VERIFY_KEYS is ${eventVerifiers.join(' and ')}'s only`)
      continue
    }
    const bySource = new Map(
      verify
        .split(',')
        .filter(Boolean)
        .map((kv) => [kv.split('=')[0], kv.slice(kv.indexOf('=') + 1)]),
    )
    for (const [s, key] of keys)
      if (bySource.get(s) !== key)
        problems.push(`${name}: EVENT_VERIFY_KEYS does not give ${s} its EVENT_SIGNING_SECRET`)
  }
}
