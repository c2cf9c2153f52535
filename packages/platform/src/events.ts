import type { Static } from '@sinclair/typebox'
import type { Ctx } from './context'
import { eventContracts } from './contracts'
import { uuidv7 } from './ids'

/**
 * The event-type registry: every type on `clinic.events` and the shape of its `data`, gathered from
 * each publisher's contracts file (contracts/<service>.ts). Payloads carry ids and what consumers
 * need; never free-text clinical notes or bodies.
 */
export { eventContracts, contractsByService } from './contracts'
export type { EventContract, ServiceContracts } from './contracts/define'
export { PatientContact } from './contracts/patients'

export type EventType = keyof typeof eventContracts
/** The `data` schema of each event type. */
export const eventTypes = Object.fromEntries(
  Object.entries(eventContracts).map(([type, c]) => [type, c.data]),
) as { [T in EventType]: (typeof eventContracts)[T]['data'] }
export type EventData<T extends EventType> = Static<(typeof eventContracts)[T]['data']>

/** CloudEvents 1.0 structured JSON, with the extensions of DESIGN.md section 5. */
export interface CloudEvent<T extends EventType = EventType> {
  specversion: '1.0'
  id: string
  source: string
  type: T
  time: string
  subject?: string
  datacontenttype: 'application/json'
  idempresa: number
  codalmacen?: string
  actorid?: string
  actorname?: string
  actortokenid?: string
  requestid?: string
  /**
   * CloudEvents Distributed Tracing extension: the W3C trace context of the span the event was
   * made in (the request, the consumer or the job that emitted it). Consumers' spans are its
   * children (or the relay's publish span's, from the AMQP headers).
   */
  traceparent?: string
  tracestate?: string
  data: EventData<T>
}

export interface MakeEvent<T extends EventType> {
  type: T
  source: string
  subject?: string
  data: EventData<T>
  companyId: number
  codalmacen?: string | null
  /** The request that caused it: actor, request id and trace context travel with the event. */
  ctx?: Pick<Ctx, 'auth' | 'requestId' | 'traceparent' | 'tracestate'>
  time?: Date
}

export function makeEvent<T extends EventType>(e: MakeEvent<T>): CloudEvent<T> {
  const event: CloudEvent<T> = {
    specversion: '1.0',
    id: uuidv7(),
    source: e.source,
    type: e.type,
    time: (e.time ?? new Date()).toISOString(),
    datacontenttype: 'application/json',
    idempresa: e.companyId,
    data: e.data,
  }
  if (e.subject) event.subject = e.subject
  if (e.codalmacen) event.codalmacen = e.codalmacen
  if (e.ctx) {
    event.actorid = e.ctx.auth.userId
    event.actorname = e.ctx.auth.username
    event.actortokenid = e.ctx.auth.tokenId
    event.requestid = e.ctx.requestId
    if (e.ctx.traceparent) event.traceparent = e.ctx.traceparent
    if (e.ctx.tracestate) event.tracestate = e.ctx.tracestate
  }
  return event
}

/** Checks the envelope of a received event (consumers dead-letter what fails). */
export function parseEvent(content: Buffer): CloudEvent | null {
  let e: unknown
  try {
    e = JSON.parse(content.toString('utf8'))
  } catch {
    return null
  }
  return isEvent(e) ? e : null
}

/** The CloudEvents envelope with the extensions consumers rely on (DESIGN.md section 5). */
export function isEvent(value: unknown): value is CloudEvent {
  const e = value as Partial<CloudEvent> | null
  return Boolean(
    e &&
    e.specversion === '1.0' &&
    typeof e.id === 'string' &&
    /^[0-9a-f-]{36}$/i.test(e.id) &&
    typeof e.type === 'string' &&
    typeof e.source === 'string' &&
    typeof e.time === 'string' &&
    !Number.isNaN(Date.parse(e.time)) &&
    Number.isInteger(e.idempresa) &&
    typeof e.data === 'object' &&
    e.data !== null,
  )
}
