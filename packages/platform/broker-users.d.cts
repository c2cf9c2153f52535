/** See broker-users.cjs: a local stack's per-service broker users, as deploy makes them. */
/** `rabbitmqctl <args>` here, or in `container` through `docker exec`; resolves with its stdout. */
export function rabbitmqctl(args: string[], o?: { container?: string; input?: string }): Promise<string>
export function brokerPassword(rootSecret: string, user: string): string
export function stackBrokerUser(service: string, prefix?: string): string
export function stackAmqpUrl(
  baseUrl: string,
  service: string,
  o: { prefix?: string; rootSecret: string },
): string
export function createBrokerUsers(o: {
  amqpUrl: string
  prefix?: string
  rootSecret: string
  definitions?: string
  /** The broker's container: rabbitmqctl runs in it (`docker exec`). */
  container?: string
  /** classic (the default: one node) or quorum (a cluster). */
  queueType?: 'classic' | 'quorum'
  /** How long a failed attempt waits before the next (default: services.json's, else 5 s). */
  retryDelayMs?: number
  /** false: the users alone, for a test that declares its own queues (default true). */
  withTopology?: boolean
}): Promise<string[]>
/** Deletes the vhost's empty queues of the topology before the definitions; returns those left. */
export function retireLegacyQueues(o: { amqpUrl: string; container?: string }): Promise<string[]>
export function removeBrokerUsers(o: { prefix: string; container?: string }): Promise<void>
export function newBrokerPrefix(): string
