import { makeEvent, type CloudEvent, type Ctx } from '@clinic/platform/core'
import type { Endpoint } from '../schemas/endpoint'

export const SOURCE = 'clinic/webhooks'

export type EndpointEventType =
  | 'webhooks.endpoint.created'
  | 'webhooks.endpoint.updated'
  | 'webhooks.endpoint.deleted'
  | 'webhooks.endpoint.disabled'

/**
 * An endpoint's id, status and version (and the names of changed fields) for the audit trail:
 * never its URL or secret. `ctx` is absent when the service itself acts (an automatic disable).
 */
export function endpointEvent<T extends EndpointEventType>(
  ctx: Ctx | null,
  type: T,
  e: Endpoint,
  changes: string[] = [],
  companyId = ctx?.auth.companyId,
): CloudEvent<T> {
  return makeEvent({
    type,
    source: SOURCE,
    subject: e.id,
    companyId: companyId as number,
    codalmacen: e.codalmacen ?? undefined,
    ...(ctx ? { ctx } : {}),
    data: {
      id: e.id,
      status: e.status,
      disabled_reason: e.disabled_reason,
      version: e.version,
      changes,
    } as CloudEvent<T>['data'],
  })
}
