import { ConfigError } from './config-error'
import { serviceList } from './service-list'

/**
 * Where an event comes from is the broker's word (DESIGN.md section 17): every service connects as
 * its own RabbitMQ user and publishes with the AMQP `user_id` property set to it, which RabbitMQ
 * refuses unless it is the connection's user. A consumer believes an event's `source` only when
 * the message's `user_id` is that source's broker user, the source emits the event's type
 * (services.json `publishes`, checked against the contracts), and the routing key is the type.
 * No key is shared, so holding one service's credentials speaks for that service alone.
 */

/** Why a message was refused (the `reason` label of events_refused_total). */
export type OriginCheck =
  'ok' | 'malformed' | 'unknown_source' | 'wrong_user' | 'type_not_emitted' | 'routing_key_mismatch'

/**
 * The broker user of a service: `clinic-<name>` (naming.cjs says the same), after a stack's prefix.
 * Broker users are machine-wide, so test stacks that run side by side each prefix theirs.
 */
export const brokerUserOf = (service: string, prefix = '') => `${prefix}clinic-${service}`

/** The user of an AMQP URL (`guest` when it names none, as amqplib logs in then). */
export function amqpUserOf(amqpUrl: string): string {
  return decodeURIComponent(new URL(amqpUrl).username) || 'guest'
}

/**
 * The prefix of this stack's broker users, read from the service's own: AMQP_URL must log in as
 * `<prefix>clinic-<service>`, or the consumer could not tell which user each source publishes as.
 */
export function brokerUserPrefix(amqpUrl: string, service: string): string {
  const user = amqpUserOf(amqpUrl)
  const own = brokerUserOf(service)
  if (!user.endsWith(own))
    throw new ConfigError(
      `Invalid configuration: AMQP_URL must log in as the service's own broker user ${own} (optionally after a stack's prefix), not ${user}`,
    )
  return user.slice(0, user.length - own.length)
}

/** Who may publish what: a source (`clinic/<service>`) -> its broker user and the types it emits. */
export interface EventOrigins {
  userOf(source: string): string | undefined
  emits(source: string, type: string): boolean
}

/** The origins of every app in services.json (their `publishes`), with this stack's user prefix. */
export function eventOrigins(prefix = ''): EventOrigins {
  const { gateway, services } = serviceList()
  const bySource = new Map(
    [gateway, ...services].map((s) => [
      `clinic/${s.name}`,
      { user: brokerUserOf(s.name, prefix), types: new Set(s.publishes ?? []) },
    ]),
  )
  return {
    userOf: (source) => bySource.get(source)?.user,
    emits: (source, type) => bySource.get(source)?.types.has(type) ?? false,
  }
}

/** What the broker says about one delivery: the validated user and the routing key it came under. */
export interface DeliveryOrigin {
  userId: string | undefined
  routingKey: string
}

/** Whether an event may be believed to come from its `source`. */
export function checkOrigin(
  event: { source: string; type: string },
  delivery: DeliveryOrigin,
  origins: EventOrigins,
): OriginCheck {
  const user = origins.userOf(event.source)
  if (user === undefined) return 'unknown_source'
  if (delivery.userId !== user) return 'wrong_user'
  if (!origins.emits(event.source, event.type)) return 'type_not_emitted'
  if (delivery.routingKey !== event.type) return 'routing_key_mismatch'
  return 'ok'
}
