import { startConsumer, type Amqp, type Consumer, type EventOrigins } from '@clinic/platform'
import type { Knex } from 'knex'
import type { Logger } from 'pino'
import type { FeedWriter } from '../domain/feed'

export const EVENTS_QUEUE = 'webhooks.events'

/**
 * Takes the domain events from RabbitMQ (idempotent by event id: the platform consumer records
 * each id in the transaction that stores it), keeps them for the change feed and queues their
 * deliveries. Batched: one transaction per up to 100 events. Only events the broker says their
 * source published are taken (event-origin.ts).
 */
export function startEventsConsumer(o: {
  amqp: Amqp
  knex: Knex
  feed: FeedWriter<Knex.Transaction>
  log: Logger
  origins: EventOrigins
  metrics?: Parameters<typeof startConsumer>[0]['metrics']
  clock: () => Date
}): Promise<Consumer> {
  return startConsumer({
    amqp: o.amqp,
    knex: o.knex,
    log: o.log,
    queue: EVENTS_QUEUE,
    origins: o.origins,
    metrics: o.metrics,
    prefetch: 200,
    handle: (event, trx, trace) => o.feed.store(trx, [event], o.clock(), () => trace),
    batch: {
      size: 100,
      lingerMs: 20,
      handle: (events, trx, traces) => o.feed.store(trx, events, o.clock(), traces),
    },
  })
}
