import { createBrokerUsers, newBrokerPrefix, removeBrokerUsers } from '@clinic/platform/broker-users'
import type { BrokerAccess } from '@clinic/platform/testing'

/**
 * Broker users of one stack on its RabbitMQ (the machine's, or the run's container): every service logs in as
 * `<prefix>clinic-<name>` with the permissions of deploy/rabbitmq/definitions.json, as deploy does,
 * so the broker's checks (user_id, write and topic permissions) run in the suites too. Returns the
 * variables service-env.cjs turns into each service's AMQP_URL (the root secret reaches no process).
 */
export async function stackBrokerUsers(
  amqpUrl: string,
  { container }: BrokerAccess = {},
): Promise<Record<string, string>> {
  const prefix = newBrokerPrefix()
  const rootSecret = `e2e-broker-root-${prefix}0123456789abcdef0123456789`
  await createBrokerUsers({ amqpUrl, prefix, rootSecret, container })
  return { BROKER_ROOT_SECRET: rootSecret, BROKER_USER_PREFIX: prefix }
}

/** Removes them (users are broker-wide: the vhost's deletion leaves them). */
export async function removeStackBrokerUsers(env: Record<string, string>, { container }: BrokerAccess = {}) {
  if (env.BROKER_USER_PREFIX) await removeBrokerUsers({ prefix: env.BROKER_USER_PREFIX, container })
}
