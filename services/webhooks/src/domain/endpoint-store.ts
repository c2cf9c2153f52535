import type { KeysetAfter, TenantStore, TenantTx, Trace } from '@clinic/platform/core'
import type { Delivery, Endpoint } from '../schemas/endpoint'
import type { ThinData } from './catalogue'

/** What an endpoint is made of before it is stored (the store adds times and version). */
export type NewEndpoint = Pick<Endpoint, 'id' | 'url' | 'event_types' | 'codalmacen' | 'description'>
export type EndpointChange = Partial<
  Pick<Endpoint, 'url' | 'event_types' | 'codalmacen' | 'description' | 'status' | 'disabled_reason'>
>
/** An event as the webhooks service keeps it: thin data only. */
export interface StoredEvent {
  id: string
  type: string
  codalmacen: string | null
  occurred_at: string
  data: ThinData
}

/** What the endpoint use cases need from storage (db/repositories/endpoints-repository.ts). */
export interface EndpointStore extends TenantStore<EndpointTx, Endpoint> {
  list(companyId: number, filter: EndpointFilter): Promise<{ rows: Endpoint[]; total: number }>
  listDeliveries(companyId: number, filter: DeliveryFilter): Promise<{ rows: Delivery[]; total: number }>
  findDelivery(companyId: number, id: string): Promise<Delivery | null>
}

export interface EndpointTx extends TenantTx<Endpoint> {
  /** The company's endpoints, counted while no other create of the company runs. */
  countLocked(): Promise<number>
  insert(e: NewEndpoint, sealedSecret: Buffer): Promise<Endpoint>
  update(id: string, values: EndpointChange): Promise<Endpoint>
  remove(id: string): Promise<boolean>
  sealedSecret(id: string): Promise<Buffer | null>
  /** The new secret signs; the old one too until `previousUntil`. */
  rotate(id: string, sealedSecret: Buffer, previousUntil: Date): Promise<void>
  /**
   * Stores an event outside the feed (webhook.test) and queues it to these endpoints. `cause`, here
   * and below: the trace context of the request, which the attempts' spans are children of.
   */
  queueEvent(event: StoredEvent, endpointIds: string[], now: Date, cause: Trace): Promise<number>
  /** Makes a delivery due now; 0 when it is in flight or already pending again. */
  retryDelivery(id: string, now: Date, cause: Trace): Promise<number>
  /** Queues every feed event since `since` that the endpoint subscribes to; how many. */
  replay(endpoint: Endpoint, since: Date, now: Date, cause: Trace): Promise<number>
}

interface Paging<K extends string> {
  offset: number
  limit: number
  after?: KeysetAfter<K>
}

export interface EndpointFilter extends Paging<'created_at' | 'id'> {
  /** null: all; else endpoints of these centers. */
  centers: string[] | null
  status?: Endpoint['status']
}

export interface DeliveryFilter extends Paging<'created_at' | 'id'> {
  endpointId: string
  status?: Delivery['status']
  eventType?: string
}
