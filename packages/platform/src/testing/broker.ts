import amqplib from 'amqplib'
import { queueTopology, sharedExchanges, type Topology, type TopologyOptions } from '../../topology.cjs'

/**
 * Declares `topology` (topology.cjs: exchanges, queues, bindings) on the vhost of `adminUrl`, over
 * AMQP as that URL's user: what the definitions' import does for a stack, for a test's own vhost or
 * queue. Services never declare (DESIGN.md section 17).
 */
export async function declareTopology(adminUrl: string, topology: Topology): Promise<void> {
  const conn = await amqplib.connect(adminUrl)
  try {
    const ch = await conn.createChannel()
    for (const e of topology.exchanges)
      await ch.assertExchange(e.name, e.type, { durable: e.durable, internal: e.internal })
    for (const q of topology.queues)
      await ch.assertQueue(q.name, { durable: q.durable, arguments: q.arguments })
    for (const b of topology.bindings) await ch.bindQueue(b.destination, b.source, b.routing_key)
  } finally {
    await conn.close()
  }
}

/** The two shared exchanges on the vhost of `adminUrl` (every stack's, made once per test vhost). */
export const declareSharedExchanges = (adminUrl: string) =>
  declareTopology(adminUrl, { exchanges: sharedExchanges(vhostOf(adminUrl)), queues: [], bindings: [] })

/**
 * One work queue of a test, with its wait and dead-letter queues, as topology.cjs makes every
 * consumer's (classic queues unless `queueType` says; a short `retryDelayMs` keeps retries quick).
 */
export const declareWorkQueue = (
  adminUrl: string,
  queue: string,
  bindings: string[],
  o: Omit<TopologyOptions, 'vhost'> = {},
) =>
  declareTopology(
    adminUrl,
    queueTopology(queue, bindings, { queueType: 'classic', ...o, vhost: vhostOf(adminUrl) }),
  )

const vhostOf = (amqpUrl: string) => decodeURIComponent(new URL(amqpUrl).pathname.slice(1)) || '/'
