/** See broker-users.cjs: a local stack's per-service broker users, as deploy makes them. */
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
}): Promise<string[]>
export function removeBrokerUsers(o: { prefix: string }): Promise<void>
export function newBrokerPrefix(): string
