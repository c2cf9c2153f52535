import type { CloudEvent } from '@clinic/platform/core'

/**
 * The event catalogue (DESIGN.md sections 5 and 10): each type an integrator can subscribe to, when
 * it fires, and where its resource is read. The webhook and the change feed carry thin `data`
 * (`ThinData`): ids, version, the names of changed fields, the status; never names, contacts,
 * notes or bodies. The receiver reads the resource through the API at `url`.
 */
export const CATALOGUE = {
  'patient.created': { resource: 'patient', path: '/patients', when: 'a patient is created' },
  'patient.updated': { resource: 'patient', path: '/patients', when: 'fields of a patient change' },
  'appointment.created': {
    resource: 'appointment',
    path: '/appointments',
    when: 'an appointment is booked (also from a hold)',
  },
  'appointment.updated': {
    resource: 'appointment',
    path: '/appointments',
    when: 'an appointment is moved, confirmed, cancelled, completed, marked no-show or edited',
  },
  'appointment.checked_in': {
    resource: 'appointment',
    path: '/appointments',
    when: 'a patient checks in',
  },
  'practitioner.created': {
    resource: 'practitioner',
    path: '/practitioners',
    when: 'a practitioner is registered',
  },
  'practitioner.updated': {
    resource: 'practitioner',
    path: '/practitioners',
    when: 'hours, time zone, slot length, name or active change',
  },
  'comms.message.queued': { resource: 'message', path: '/comms/messages', when: 'a message is accepted' },
  'comms.message.sent': { resource: 'message', path: '/comms/messages', when: 'the provider took it' },
  'comms.message.failed': {
    resource: 'message',
    path: '/comms/messages',
    when: 'it could not be sent after its retries',
  },
  'comms.message.delivered': {
    resource: 'message',
    path: '/comms/messages',
    when: 'a delivery receipt arrived (status delivered or undelivered)',
  },
} as const

export type CatalogueType = keyof typeof CATALOGUE
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
