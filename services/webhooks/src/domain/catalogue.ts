import { eventContracts, type CloudEvent, type EventContract, type EventType } from '@clinic/platform/core'

/** The event types of the contracts that offer themselves to integrators (a `webhook` entry). */
type Contracts = typeof eventContracts
export type CatalogueType = {
  [T in EventType]: Contracts[T] extends { webhook: object } ? T : never
}[EventType]

interface CatalogueEntry {
  resource: string
  path: string
  when: string
}

/**
 * The event catalogue (DESIGN.md sections 5 and 10), from the publishers' contracts: each type an
 * integrator can subscribe to, when it fires, and where its resource is read. The webhook and the
 * change feed carry thin `data` (`ThinData`): ids, version, the names of changed fields, the
 * status; never names, contacts, notes or bodies. The receiver reads the resource through the API
 * at `url`.
 */
export const CATALOGUE = Object.fromEntries(
  Object.entries(eventContracts as Record<string, EventContract>).flatMap(([type, c]) =>
    c.webhook ? [[type, { resource: c.resource, path: c.webhook.path, when: c.webhook.when }]] : [],
  ),
) as Record<CatalogueType, CatalogueEntry>

export const CATALOGUE_TYPES = Object.keys(CATALOGUE) as CatalogueType[]
/** Sent by POST /webhooks/endpoints/{id}/test to that endpoint only; not in the change feed. */
export const TEST_EVENT_TYPE = 'webhook.test'
/** The API base the `url` of a payload is written under. */
export const API_BASE = '/api'

export const isCatalogueType = (t: string): t is CatalogueType => Object.hasOwn(CATALOGUE, t)

export interface ThinData {
  id: string
  resource_type: string
  codalmacen: string | null
  version: number | null
  changes: string[]
  status?: string
  url: string
}

const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined)

/** The thin `data` of a catalogue event: only the fields above, whatever else the event carries. */
export function thinData(event: CloudEvent): ThinData {
  const entry = CATALOGUE[event.type as CatalogueType]
  const d = event.data as Record<string, unknown>
  const id = str(d.id) ?? event.subject ?? ''
  const out: ThinData = {
    id,
    resource_type: entry.resource,
    codalmacen: event.codalmacen ?? null,
    version: typeof d.version === 'number' ? d.version : null,
    changes: Array.isArray(d.changes) ? d.changes.filter((c): c is string => typeof c === 'string') : [],
    url: `${API_BASE}${entry.path}/${encodeURIComponent(id)}`,
  }
  const status = str(d.new_status) ?? str(d.status)
  if (status) out.status = status
  return out
}

/** The data of a webhook.test event: the endpoint it was sent to. */
export const testData = (endpointId: string, codalmacen: string | null): ThinData => ({
  id: endpointId,
  resource_type: 'webhook_endpoint',
  codalmacen,
  version: null,
  changes: [],
  url: `${API_BASE}/webhooks/endpoints/${endpointId}`,
})
