// @clinic/platform/events: the event registry, AMQP, the outbox relay and the idempotent consumer.
export * from '../events'
export * from '../access-batch'
export * from '../amqp'
export * from '../outbox'
export * from '../consumer'
export type { EventTraces } from '../consumer-span'
export * from '../event-origin'
