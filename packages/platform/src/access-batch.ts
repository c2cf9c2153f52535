import { isEvent, makeEvent, type CloudEvent } from './events'

/** The gateway's access events: what an `http.batch` may carry. */
export const ACCESS_EVENT_TYPES: ReadonlySet<string> = new Set([
  'http.request',
  'http.refused',
  'http.public',
])
const GATEWAY = 'clinic/gateway'

/**
 * The gateway's access events of one group commit as one `http.batch` event. The events
 * go in as JSON text: the batch's one signature covers them, and neither the outbox's jsonb nor
 * the signature's canonical JSON walks each of them.
 */
export function accessBatch(events: readonly CloudEvent[]): CloudEvent<'http.batch'> {
  return makeEvent({
    type: 'http.batch',
    source: GATEWAY,
    companyId: 0,
    data: { count: events.length, events: JSON.stringify(events) },
  })
}

/**
 * The access events of an `http.batch` (checked: the batch's signature is the consumer's to check
 * first). Throws on a batch that does not hold what `accessBatch` writes: events of the gateway, of
 * the access types, as many as it says.
 */
export function unpackAccessBatch(batch: CloudEvent): CloudEvent[] {
  const data = batch.data as { count?: unknown; events?: unknown }
  if (batch.type !== 'http.batch' || batch.source !== GATEWAY || typeof data.events !== 'string')
    throw new Error('not an access batch of the gateway')
  const events: unknown = JSON.parse(data.events)
  if (!Array.isArray(events) || events.length !== data.count)
    throw new Error('access batch: count and events disagree')
  for (const e of events)
    if (!isEvent(e) || e.source !== GATEWAY || !ACCESS_EVENT_TYPES.has(e.type))
      throw new Error('access batch: an entry is not an access event of the gateway')
  return events as CloudEvent[]
}

/** The events an event stands for: the entries of an access batch, else itself. */
export const expandEvent = (e: CloudEvent): CloudEvent[] =>
  e.type === 'http.batch' ? unpackAccessBatch(e) : [e]
