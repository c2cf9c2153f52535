import { Type, type Static, type TSchema } from '@sinclair/typebox'
import type { Ctx } from './context'
import { uuidv7 } from './ids'

/**
 * The event-type registry: every type on `clinic.events` and the shape of its `data`.
 * Payloads carry ids and what consumers need; never free-text clinical notes or bodies.
 */
const Guardian = Type.Object({
  name: Type.String(),
  relationship: Type.Union([Type.String(), Type.Null()]),
  email: Type.Union([Type.String(), Type.Null()]),
  phone: Type.Union([Type.String(), Type.Null()]),
})
const PatientContactFields = {
  id: Type.String(),
  codalmacen: Type.Union([Type.String(), Type.Null()]),
  first_name: Type.String(),
  last_name: Type.String(),
  email: Type.Union([Type.String(), Type.Null()]),
  phone: Type.Union([Type.String(), Type.Null()]),
  preferred_channel: Type.Union([Type.String(), Type.Null()]),
  language: Type.String(),
  requires_legal_guardian: Type.Boolean(),
  guardian: Type.Union([Guardian, Type.Null()]),
  version: Type.Integer(),
}
/**
 * What other services may know of a patient: the data of `patient.created` and the answer of the
 * patients service's internal contact lookup (comms addresses messages with it). No notes.
 */
export const PatientContact = Type.Object(PatientContactFields)
export type PatientContact = Static<typeof PatientContact>

/** Ids, channel, role and status only: never a body, subject or address. */
const MessageIds = {
  id: Type.String(),
  patient_id: Type.String(),
  appointment_id: Type.Union([Type.String(), Type.Null()]),
  channel: Type.String(),
  recipient_role: Type.String(),
  status: Type.String(),
}
/** Present (true) when a message went to a patient who requires a guardian, with `override_guardian`. */
const OverrideGuardian = Type.Optional(Type.Literal(true))
const Changes = Type.Array(Type.String(), { description: 'names of changed fields, never their values' })
/** What reminders and schedules need of an appointment: never its reason, notes or cancellation reason. */
const AppointmentSlot = {
  id: Type.String(),
  patient_id: Type.String(),
  codalmacen: Type.String(),
  practitioner: Type.String(),
  starts_at: Type.String({ description: 'RFC 3339 UTC' }),
  ends_at: Type.String({ description: 'RFC 3339 UTC' }),
  time_zone: Type.String({ description: 'IANA zone for local-time reminders' }),
  status: Type.String(),
  checked_in_at: Type.Union([Type.String(), Type.Null()]),
  version: Type.Integer(),
}
const StatusChange = {
  changes: Changes,
  old_status: Type.Union([Type.String(), Type.Null()], { description: 'when the status changed, else null' }),
  new_status: Type.Union([Type.String(), Type.Null()], { description: 'when the status changed, else null' }),
}

/**
 * An API token as the audit trail keeps it (the gateway's admin CLI): whose, where and what it may
 * use, until when, and who ran the command (`actor`: --actor or the OS user). Never the secret.
 */
const TokenChange = Type.Object({
  id: Type.String(),
  user_id: Type.String(),
  username: Type.String(),
  name: Type.Union([Type.String(), Type.Null()]),
  centers: Type.Union([Type.Array(Type.String()), Type.Null()], { description: 'null: every center' }),
  scopes: Type.Union([Type.Array(Type.String()), Type.Null()], { description: 'null: every scope' }),
  expires_at: Type.Union([Type.String(), Type.Null()], { description: 'RFC 3339 UTC' }),
  actor: Type.String(),
})

/** Present (true) when a booking or move was made outside a registered practitioner's hours on purpose. */
const OutsideHours = Type.Optional(Type.Literal(true))
const PractitionerIds = {
  id: Type.String(),
  active: Type.Boolean(),
  version: Type.Integer(),
}

/**
 * A webhook endpoint of an integrator (DESIGN.md section 10), on the audit trail: its id, status and
 * the names of changed fields; never its URL, description or secret.
 */
const WebhookEndpointChange = Type.Object({
  id: Type.String(),
  status: Type.String(),
  disabled_reason: Type.Union([Type.String(), Type.Null()]),
  version: Type.Integer(),
  changes: Changes,
})

export const eventTypes = {
  'patient.created': PatientContact,
  'patient.updated': Type.Object({ ...PatientContactFields, changes: Changes }),
  'appointment.created': Type.Object({ ...AppointmentSlot, outside_hours: OutsideHours }),
  /** Which fields changed, never their values (the new slot is read from the service). */
  'appointment.updated': Type.Object({
    id: Type.String(),
    patient_id: Type.String(),
    version: Type.Integer(),
    ...StatusChange,
    outside_hours: OutsideHours,
  }),
  /** A practitioner's record (DESIGN.md section 11): ids and flags; hours are read from the service. */
  'practitioner.created': Type.Object(PractitionerIds),
  'practitioner.updated': Type.Object({ ...PractitionerIds, changes: Changes }),
  'appointment.checked_in': Type.Object({ ...AppointmentSlot, ...StatusChange }),
  /** `override_guardian`: sent to a patient who requires a guardian, on purpose (DESIGN.md section 3). */
  'comms.message.queued': Type.Object({ ...MessageIds, override_guardian: OverrideGuardian }),
  /** Kept but never sent: the address opted out (DESIGN.md section 12). */
  'comms.message.suppressed': Type.Object({ ...MessageIds, override_guardian: OverrideGuardian }),
  'comms.message.sent': Type.Object(MessageIds),
  'comms.message.failed': Type.Object(MessageIds),
  'comms.message.delivered': Type.Object(MessageIds),
  /**
   * Consent per company, channel and address (DESIGN.md section 12): the preference's id (a hash of
   * company, channel and address), never the address. `source`: api, sms_keyword, email_unsubscribe.
   */
  'comms.preference.updated': Type.Object({
    preference_id: Type.String(),
    channel: Type.String(),
    opted_out: Type.Boolean(),
    source: Type.String(),
    changes: Changes,
  }),
  'webhooks.endpoint.created': WebhookEndpointChange,
  'webhooks.endpoint.updated': WebhookEndpointChange,
  'webhooks.endpoint.deleted': WebhookEndpointChange,
  /** Disabled by the service itself (410 Gone, or 24 h of failed deliveries): `disabled_reason` says which. */
  'webhooks.endpoint.disabled': WebhookEndpointChange,
  'http.request': Type.Object({
    method: Type.String(),
    path: Type.String(),
    status: Type.Integer(),
    duration_ms: Type.Number(),
    ip: Type.String(),
    resource_type: Type.Union([Type.String(), Type.Null()]),
    resource_id: Type.Union([Type.String(), Type.Null()]),
  }),
  /** Requests refused for a missing or unknown token, one event per client address and minute. */
  'http.refused': Type.Object({
    ip: Type.String(),
    count: Type.Integer(),
    /** The minute counted, as an RFC 3339 instant. */
    window_start: Type.String(),
    /** Up to ten of the paths asked for, without query strings. */
    paths: Type.Array(Type.String()),
  }),
  /**
   * Requests served without an API token that reach the API (provider callbacks, CORS preflights),
   * one event per method, status, client address and minute (no company: 0).
   */
  'http.public': Type.Object({
    method: Type.String(),
    status: Type.Integer(),
    ip: Type.String(),
    count: Type.Integer(),
    /** The minute counted, as an RFC 3339 instant. */
    window_start: Type.String(),
    /** Up to ten of the paths asked for, without query strings. */
    paths: Type.Array(Type.String()),
  }),
  /**
   * The gateway's access events of one group commit, as one message (issue 22): `events` is the
   * JSON text of an array of `http.request`, `http.refused` and `http.public` events of the gateway,
   * unsigned (this event's signature covers the text), `count` their number. Audit records each as
   * a row of its own; one outbox row, one message and one signature per batch instead of per request.
   */
  'http.batch': Type.Object({ count: Type.Integer(), events: Type.String() }),
  /** An API token made with the admin CLI (DESIGN.md section 13): never the token or its hash. */
  'token.created': TokenChange,
  /** An API token revoked with the admin CLI. */
  'token.revoked': TokenChange,
} satisfies Record<string, TSchema>

export type EventType = keyof typeof eventTypes
export type EventData<T extends EventType> = Static<(typeof eventTypes)[T]>

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
  /** HMAC of the rest of the event (event-signing.ts); added when the event is enqueued or sent. */
  signature?: string
  data: EventData<T>
}

export interface MakeEvent<T extends EventType> {
  type: T
  source: string
  subject?: string
  data: EventData<T>
  companyId: number
  codalmacen?: string | null
  /** The request that caused it: actor and request id travel with the event. */
  ctx?: Pick<Ctx, 'auth' | 'requestId'>
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
