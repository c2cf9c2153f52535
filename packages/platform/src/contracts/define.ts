import { Type, type TSchema } from '@sinclair/typebox'

/**
 * One event type a service emits, as every other service may rely on it: the shape of its `data`
 * (the wire format of DESIGN.md section 5) and what it means to the services that read every event
 * (audit, webhooks), as data, so that they name no other service's events in code.
 */
export interface EventContract {
  data: TSchema
  /** What the audit trail (and, for catalogue events, the webhook payload) calls its resource. */
  resource: string
  /**
   * When the audit trail records it as a failure rather than a success: always, or when a field of
   * its `data` holds one of the values.
   */
  failure?: 'always' | { field: string; values: readonly string[] }
  /** Offered to integrators (webhooks and the change feed): when it fires, and where its resource is read. */
  webhook?: { when: string; path: string }
}

/** A service's contracts file: its event types (services.json `publishes`, the same list) by name. */
export type ServiceContracts = Record<string, EventContract>

/** Names of changed fields, never their values: the `changes` of most events. */
export const Changes = Type.Array(Type.String(), {
  description: 'names of changed fields, never their values',
})
