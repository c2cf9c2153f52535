/** See topology.cjs: the broker's exchanges, queues and bindings, from services.json. */
export const EXCHANGE: 'clinic.events'
export const DEAD_LETTER_EXCHANGE: 'clinic.events.dlx'
export const DEFAULT_RETRY_DELAY_MS: number
export const QUORUM_DELIVERY_LIMIT: number

export type QueueType = 'classic' | 'quorum'
export interface ExchangeDefinition {
  name: string
  vhost: string
  type: 'topic' | 'direct' | 'fanout'
  durable: true
  auto_delete: false
  internal: boolean
  arguments: Record<string, never>
}
export interface QueueDefinition {
  name: string
  vhost: string
  durable: true
  auto_delete: false
  arguments: Record<string, string | number>
}
export interface BindingDefinition {
  source: string
  vhost: string
  destination: string
  destination_type: 'queue'
  routing_key: string
  arguments: Record<string, never>
}
export interface Topology {
  exchanges: ExchangeDefinition[]
  queues: QueueDefinition[]
  bindings: BindingDefinition[]
}
export interface TopologyOptions {
  vhost?: string
  queueType?: QueueType
  retryDelayMs?: number
}

export function queueNames(queue: string): { queue: string; wait: string; back: string; dlq: string }
export function workQueues(): Array<{
  service: string
  queue: string
  bindings: string[]
  retryDelayMs: number
}>
export function sharedExchanges(vhost: string): ExchangeDefinition[]
export function queueTopology(queue: string, bindings: string[], o?: TopologyOptions): Topology
export function topology(o?: TopologyOptions): Topology
