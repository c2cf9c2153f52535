// Broker users in Compose: each service logs in to RabbitMQ as its own user clinic-<name>
// (deploy/rabbitmq/definitions.json: it may publish only its own routing keys, as the user_id the
// consumers believe) on the vhost `clinic`, whose password the one-shot broker-users sets
// (deploy/rabbitmq/users.sh) before any service starts.
import { SERVICES, envName, get, namesOf, parseUrl, read } from './lib.mjs'

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
  }
}
