'use strict'
// The broker's topology, in one place: the exchanges, queues and bindings of packages/platform/
// services.json (`consumes`), in RabbitMQ's definitions format. Deploy imports it
// (deploy/rabbitmq/definitions.json, written by scripts/generate/rabbitmq.mjs), `npm start` and the
// test stacks import it as the administrator (broker-users.cjs), and tests of the consumer declare
// one queue's part of it (@clinic/platform/testing). Services declare nothing: they check that
// what they use exists (DESIGN.md section 17).
//
// A work queue `q` is bound to clinic.events. A failed attempt is rejected by the consumer and the
// broker does the rest, so the message is never republished and keeps the `user_id` RabbitMQ
// validated on its first publish: q dead-letters it (no dead-letter routing key: it keeps its
// routing key) into `q.wait`, an internal fanout exchange, to the queue `q.wait`, whose TTL is the
// retry delay; expired there, it is dead-lettered into `q.back`, internal too, back into q, the
// broker counting each rejection in `x-death`. Internal exchanges take no publish from any client,
// the administrator included. What a consumer gives up on (refused, or out of attempts) it parks
// in `q.dlq` through clinic.events.dlx (routing key q), which no service reads.
const { apps } = require('./naming.cjs')

const EXCHANGE = 'clinic.events'
const DEAD_LETTER_EXCHANGE = 'clinic.events.dlx'
/** How long a failed message waits in `q.wait` before its next attempt, unless services.json says. */
const DEFAULT_RETRY_DELAY_MS = 5000
/**
 * Deliveries of one message before a quorum queue dead-letters it: the consumer holds a message up
 * to 10 s per redelivery while the database is away, so this is about 27 hours of outage.
 */
const QUORUM_DELIVERY_LIMIT = 10000

/** The names around one work queue. */
const queueNames = (queue) => ({
  queue,
  /** The exchange and the queue a rejected message waits in. */
  wait: `${queue}.wait`,
  /** The exchange the waited message comes back through. */
  back: `${queue}.back`,
  /** Where the consumer parks what it gives up on. */
  dlq: `${queue}.dlq`,
})

/** Every work queue of services.json: [{ service, queue, bindings, retryDelayMs }]. */
const workQueues = () =>
  apps.flatMap((s) =>
    (s.consumes ?? []).map((c) => ({
      service: s.name,
      queue: c.queue,
      bindings: c.bindings,
      retryDelayMs: c.retry_delay_ms ?? DEFAULT_RETRY_DELAY_MS,
    })),
  )

const exchange = (vhost, name, type, internal = false) => ({
  name,
  vhost,
  type,
  durable: true,
  auto_delete: false,
  internal,
  arguments: {},
})
const queueOf = (vhost, name, args) => ({ name, vhost, durable: true, auto_delete: false, arguments: args })
const binding = (vhost, source, destination, routingKey) => ({
  source,
  vhost,
  destination,
  destination_type: 'queue',
  routing_key: routingKey,
  arguments: {},
})

/** The two shared exchanges. */
const sharedExchanges = (vhost) => [
  exchange(vhost, EXCHANGE, 'topic'),
  exchange(vhost, DEAD_LETTER_EXCHANGE, 'direct'),
]

/**
 * One work queue's part: its queues, exchanges and bindings. Quorum queues (production) dead-letter
 * at least once (the source keeps a message until its target has it), which needs reject-publish.
 */
function queueTopology(queue, bindings, { vhost = 'clinic', queueType = 'quorum', retryDelayMs } = {}) {
  const n = queueNames(queue)
  const quorum = queueType === 'quorum'
  const safeDeadLetters = quorum
    ? { 'x-dead-letter-strategy': 'at-least-once', 'x-overflow': 'reject-publish' }
    : {}
  return {
    exchanges: [exchange(vhost, n.wait, 'fanout', true), exchange(vhost, n.back, 'fanout', true)],
    queues: [
      queueOf(vhost, n.queue, {
        'x-queue-type': queueType,
        'x-dead-letter-exchange': n.wait,
        ...(quorum ? { 'x-delivery-limit': QUORUM_DELIVERY_LIMIT } : {}),
        ...safeDeadLetters,
      }),
      queueOf(vhost, n.wait, {
        'x-queue-type': queueType,
        'x-message-ttl': retryDelayMs ?? DEFAULT_RETRY_DELAY_MS,
        'x-dead-letter-exchange': n.back,
        ...safeDeadLetters,
      }),
      queueOf(vhost, n.dlq, { 'x-queue-type': queueType }),
    ],
    bindings: [
      ...bindings.map((key) => binding(vhost, EXCHANGE, n.queue, key)),
      binding(vhost, DEAD_LETTER_EXCHANGE, n.dlq, n.queue),
      binding(vhost, n.wait, n.wait, ''),
      binding(vhost, n.back, n.queue, ''),
    ],
  }
}

/**
 * The whole topology of services.json on `vhost`: `queueType` quorum in production (replicated),
 * classic on one node; `retryDelayMs` overrides every queue's delay (test stacks).
 */
function topology({ vhost = 'clinic', queueType = 'quorum', retryDelayMs } = {}) {
  const parts = workQueues().map((w) =>
    queueTopology(w.queue, w.bindings, { vhost, queueType, retryDelayMs: retryDelayMs ?? w.retryDelayMs }),
  )
  return {
    exchanges: [...sharedExchanges(vhost), ...parts.flatMap((p) => p.exchanges)],
    queues: parts.flatMap((p) => p.queues),
    bindings: parts.flatMap((p) => p.bindings),
  }
}

module.exports = {
  EXCHANGE,
  DEAD_LETTER_EXCHANGE,
  DEFAULT_RETRY_DELAY_MS,
  QUORUM_DELIVERY_LIMIT,
  queueNames,
  workQueues,
  sharedExchanges,
  queueTopology,
  topology,
}
